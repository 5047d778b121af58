import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { CHROMIUM, launchChromium } from "../support/chromium";
import { startOidcProvider, type OidcPeer } from "../peers/oidc";
import { startOAuthMcpServer, type OAuthMcpServer } from "../peers/oauth-mcp-server";
import { ADMIN, apiClient, startTestService, type TestService } from "../support/service";

// Debian's Chromium, installed by .ci/run when missing. Without it (no package could be installed) this test is
// skipped, and says so.
const available = existsSync(CHROMIUM);
if (!available)
  console.warn(`SKIPPED: the headless browser test needs ${CHROMIUM} (Debian package "chromium"), which is not installed`);

let op: OidcPeer;
let server: OAuthMcpServer;
let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!available) return;
  op = await startOidcProvider();
  server = startOAuthMcpServer(op.issuer);
  service = await startTestService();
  browser = await launchChromium();
});
afterAll(async () => {
  if (!available) return;
  await browser.close();
  await service.stop();
  await server.stop();
  await op.stop();
});

/** Opens the authorization URL in a page of `context`, signs in and consents at oidc-provider: the page ends on the callback. */
async function approveAtProvider(context: BrowserContext, authorizationUrl: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(authorizationUrl);
  // oidc-provider's sign-in form, then its consent form.
  await page.fill('input[name="login"]', "alice@example.com");
  await page.fill('input[name="password"]', "any password");
  await page.click('button[type="submit"]');
  await page.waitForSelector('input[name="prompt"][value="consent"]', { state: "attached" });
  await page.click('button[type="submit"]');
  await page.waitForURL(`${service.url}/api/v1/connectors/oauth/callback**`);
  return page;
}

/** A connector of `as` waiting for authorization: its id and authorization URL. */
async function pending(as = ADMIN) {
  const api = apiClient(service.url, as);
  const created = await api("POST", "/api/v1/connectors", { body: { url: server.url, metadata: { name: "Protected" } } });
  const connect = await api("POST", `/api/v1/connectors/${created.body.id}/connect`);
  return { id: created.body.id as string, url: connect.body.auth_request.authorization_url as string };
}

const stateOf = async (id: string) => (await service.api("GET", `/api/v1/connectors/${id}`)).body.state;

test.skipIf(!available)(
  "a user in a real browser signs in, consents, confirms on the service's page with their password, and lands on the success page",
  async () => {
    const { id, url } = await pending();
    const context = await browser.newContext();
    const page = await approveAtProvider(context, url);
    expect(await page.textContent("h1")).toBe("Connect Protected for admin?");
    expect(await stateOf(id)).toBe("auth_required");
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await page.click("text=Sign in and connect");
    await page.waitForSelector("h1:text('Connected')");
    expect(await page.title()).toBe("Connected");
    expect(await stateOf(id)).toBe("connected");
    await context.close();
  },
  60_000,
);

test.skipIf(!available)(
  "signed in to the console in the same browser, one click finishes: the SameSite=Strict cookie goes with the page's own form",
  async () => {
    const { id, url } = await pending();
    const context = await browser.newContext();
    expect((await context.request.post(`${service.url}/api/v1/session`, { data: ADMIN })).status()).toBe(201);
    const page = await approveAtProvider(context, url);
    await page.click("text=Connect (signed in to the console as admin)");
    await page.waitForSelector("h1:text('Connected')");
    expect(await stateOf(id)).toBe("connected");
    await context.close();
  },
  60_000,
);

test.skipIf(!available)(
  "another user's authorization URL, approved in the administrator's signed-in browser, is refused and exchanges nothing",
  async () => {
    const mallory = (await service.user("mallory")).basic;
    const { id, url } = await pending(mallory);
    const context = await browser.newContext();
    expect((await context.request.post(`${service.url}/api/v1/session`, { data: ADMIN })).status()).toBe(201);
    const page = await approveAtProvider(context, url);
    expect(await page.textContent("h1")).toBe("Connect Protected for mallory?");
    await page.click("text=Connect (signed in to the console as mallory)");
    await page.waitForSelector("text=only they can finish it");
    expect(await stateOf(id)).toBe("auth_required");
    await context.close();
  },
  60_000,
);
