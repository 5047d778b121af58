import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { startOidcProvider, type OidcPeer } from "../peers/oidc";
import { startOAuthMcpServer, type OAuthMcpServer } from "../peers/oauth-mcp-server";
import { startTestService, type TestService } from "../support/service";

// Debian's Chromium, installed by .ci/run when missing. Without it (no package could be installed) this test is
// skipped, and says so.
const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`SKIPPED: the headless browser test needs ${CHROMIUM} (Debian package "chromium"), which is not installed`);

let op: OidcPeer;
let server: OAuthMcpServer;
let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!available) return;
  op = await startOidcProvider();
  server = startOAuthMcpServer(op.issuer);
  service = await startTestService();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // The machine has no network but loopback: keep Chromium from reaching for anything else.
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
});
afterAll(async () => {
  if (!available) return;
  await browser.close();
  await service.stop();
  await server.stop();
  await op.stop();
});

test.skipIf(!available)("a user in a real browser signs in, consents, and lands on the success page", async () => {
  const created = await service.api("POST", "/api/v1/connectors", { body: { url: server.url } });
  const connect = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
  const page = await browser.newPage();
  await page.goto(connect.body.auth_request.authorization_url);
  // oidc-provider's sign-in form, then its consent form.
  await page.fill('input[name="login"]', "alice@example.com");
  await page.fill('input[name="password"]', "any password");
  await page.click('button[type="submit"]');
  await page.waitForSelector('input[name="prompt"][value="consent"]', { state: "attached" });
  await page.click('button[type="submit"]');
  await page.waitForURL(`${service.url}/api/v1/connectors/oauth/callback**`);
  expect(await page.textContent("h1")).toBe("Connected");
  expect(await page.title()).toBe("Connected");
  expect((await service.api("GET", `/api/v1/connectors/${created.body.id}`)).body.state).toBe("connected");
  await page.close();
}, 60_000);
