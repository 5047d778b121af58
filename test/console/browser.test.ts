import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { signInToConsole } from "../support/browser";
import { startBearerServer, type BearerServer } from "../peers/bearer-server";
import { startOAuthMcpServer, type OAuthMcpServer } from "../peers/oauth-mcp-server";
import { startOidcProvider, type OidcPeer } from "../peers/oidc";
import { apiClient } from "../support/service";
import { authHeader, type Api } from "../support/api";
import { buildBinary, startBinary, stopBinary, type Started } from "../support/binary";
import { mcpClient, toolText } from "../support/mcp";
import { sharedPostgres, TEST_STORE } from "../support/store";
import { CHROMIUM, chromiumAvailable, launchChromium } from "../support/chromium";

// The web console in headless Chromium (Debian's, installed by .ci/run when missing; without it this file is skipped and
// says so), against the compiled binary — the console's files as the binary embeds them — and real peers: an MCP
// server that wants a bearer header, an OAuth-protected MCP server and oidc-provider as its authorization server.
const available = chromiumAvailable;
if (!available)
  console.warn(`SKIPPED: the console browser test needs ${CHROMIUM} (Debian package "chromium"), which is not installed`);

const ADMIN = { username: "admin", password: "console-admin-password" };
const BEARER_SECRET = `sk_console_${randomBytes(12).toString("hex")}`;
const AXE = readFileSync(Bun.resolveSync("axe-core/axe.min.js", import.meta.dir), "utf8");

/** Screenshots of each step: TEST_ARTIFACTS_DIR, else a fresh folder under the OS temp dir (printed). */
const ARTIFACTS = process.env.TEST_ARTIFACTS_DIR
  ? join(process.env.TEST_ARTIFACTS_DIR, "console")
  : mkdtempSync(join(tmpdir(), "cs-console-screens-"));
/** The README's picture of the console, written only when asked. */
const README_SCREENSHOT = join(import.meta.dir, "console.png");

let work: string;
let service: Started;
let api: Api;
let bearer: BearerServer;
let op: OidcPeer;
let oauthServer: OAuthMcpServer;
let browser: Browser;
/** Grants oidc-provider stored: destroyed to make the service's next refresh fail with invalid_grant. */
const grants: { destroy(): Promise<void> }[] = [];

beforeAll(async () => {
  if (!available) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  console.log(`console screenshots: ${ARTIFACTS}`);
  work = mkdtempSync(join(tmpdir(), "cs-console-"));
  const database: Record<string, string> =
    TEST_STORE === "postgres"
      ? { DATABASE__URL: await (await sharedPostgres()).createDatabase() }
      : { DATABASE__PATH: join(work, "data", "cs.db") };
  const [, provider] = await Promise.all([buildBinary(), startOidcProvider()]);
  op = provider;
  op.provider.on("grant.saved", (grant: { destroy(): Promise<void> }) => void grants.push(grant));
  oauthServer = startOAuthMcpServer(op.issuer);
  bearer = startBearerServer(BEARER_SECRET);
  service = await startBinary(work, {
    ...database,
    SECRETS__KEY: randomBytes(32).toString("base64"),
    AUTH__ADMIN_PASSWORD: ADMIN.password,
    SERVER__SHUTDOWN_TIMEOUT_SECONDS: "1",
  });
  api = apiClient(service.url, ADMIN);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  if (service) await stopBinary(service);
  await Promise.all([bearer?.stop(), oauthServer?.stop(), op?.stop()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

// ---- Helpers ------------------------------------------------------------------------------------------------

type Watched = { page: Page; problems: string[]; elsewhere: string[] };

/** A page of a new browser context, watched for script errors, CSP refusals and requests to any other origin. */
async function openConsole(context: BrowserContext): Promise<Watched> {
  const page = await context.newPage();
  const problems: string[] = [];
  const elsewhere: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 40[134]/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on("request", (r) => {
    if (!r.url().startsWith(`${service.url}/`) && !r.url().startsWith("data:")) elsewhere.push(r.url());
  });
  await page.goto(service.url);
  return { page, problems, elsewhere };
}

async function signIn(page: Page) {
  await signInToConsole(page, ADMIN);
  await page.waitForSelector("#live-state:text('Live updates: on')");
}

async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/**
 * axe-core over the page (or one part of it): no `serious` or `critical` violation. Evaluated through the DevTools
 * protocol rather than a <script> tag, which the console's CSP refuses (as it should).
 */
async function expectAccessible(page: Page, what: string, include?: string) {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE);
  const violations = await page.evaluate(async (context) => {
    const axe = (
      window as unknown as {
        axe: {
          run(
            c: unknown,
            o: unknown,
          ): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe;
    const result = await axe.run(context ? { include: [context] } : document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
    }));
  }, include ?? null);
  const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  if (violations.length) console.log(`axe on ${what}: ${JSON.stringify(violations)}`);
  expect(bad, what).toEqual([]);
  return violations;
}

const card = (page: Page, id: string) => page.locator(`#connector-list li[data-id="${id}"]`);
const waitForState = (page: Page, id: string, state: string) =>
  page.waitForSelector(`#connector-list li[data-id="${id}"][data-state="${state}"]`);

/** Adds a connector through the dialog; returns its id (the new row has focus on its Connect button). */
async function addConnector(page: Page, url: string, name: string): Promise<string> {
  await page.click("#add-connector");
  await page.waitForSelector("dialog[open]");
  // Focus moved into the dialog (its first field).
  expect(await page.evaluate(() => document.activeElement?.closest("dialog") !== null)).toBe(true);
  await page.fill("dialog input[type=url]", url);
  await page.locator("dialog[open]").getByLabel("Name (optional)").fill(name);
  await page.click("dialog button[type=submit]");
  await page.waitForSelector("dialog", { state: "detached" });
  const row = page.locator("#connector-list li", { has: page.locator("h2", { hasText: name }) }).first();
  const id = (await row.getAttribute("data-id"))!;
  expect(await row.getAttribute("data-state")).toBe("created");
  return id;
}

/** oidc-provider's pages in the popup: sign in (unless this browser is signed in there already), then consent. */
async function approveInPopup(popup: Page) {
  await popup.waitForSelector('input[name="login"], input[name="prompt"][value="consent"]', { state: "attached" });
  if ((await popup.locator('input[name="login"]').count()) > 0) {
    await popup.fill('input[name="login"]', "alice@example.com");
    await popup.fill('input[name="password"]', "any password");
    await popup.click('button[type="submit"]');
    await popup.waitForSelector('input[name="prompt"][value="consent"]', { state: "attached" });
  }
  await popup.click('button[type="submit"]');
  // The service's confirmation: the console's session cookie goes with its form, so one click finishes. The console
  // closes the popup once the connector is connected: don't wait on this page after the click.
  await popup.waitForSelector("text=/^Connect \\(signed in to the console as/");
  await popup.click("text=/^Connect \\(signed in to the console as/", { noWaitAfter: true });
}

/** Connect through the dialog with OAuth: the popup opens in the click, the person approves there; resolves when it has closed. */
async function connectWithOAuth(page: Page, id: string, button: string) {
  await card(page, id).getByRole("button", { name: button }).click();
  await page.waitForSelector("dialog[open]");
  expect(await page.isChecked("dialog input[value=oauth]")).toBe(true);
  const [popup] = await Promise.all([page.waitForEvent("popup"), page.click("dialog button[type=submit]")]);
  await approveInPopup(popup);
  await waitForState(page, id, "connected");
  if (!popup.isClosed()) await popup.waitForEvent("close");
}

// ---- Tests ------------------------------------------------------------------------------------------------------

test.skipIf(!available)(
  "a person signs in, connects a header server and an OAuth server (in a popup), sees a revoked grant disconnect it live, re-authorizes, makes and revokes a token, disconnects, deletes, signs out",
  async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: service.url });
    const { page, problems, elsewhere } = await openConsole(context);

    await page.waitForSelector("#view-signin:not([hidden])");
    expect(await page.title()).toBe("Sign in · connector-service");
    await expectAccessible(page, "the sign-in page");
    await shot(page, "01-sign-in");
    // The keyboard's first stop is the skip link.
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await signIn(page);
    // Signed in, focus is on the view's heading.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("connectors-title");
    // Every later change arrives in this same document: the list is never reloaded.
    await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));

    // A server that wants a header: added, then connected through the form; its value is never shown again.
    const bearerId = await addConnector(page, bearer.url, "Bearer server");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("data-focus-key"))).toBe("connect");
    await page.keyboard.press("Enter"); // the focused Connect button
    await page.waitForSelector("dialog[open]");
    await expectAccessible(page, "the connect dialog", "dialog[open]");
    await page.check("dialog input[value=headers]");
    expect(await page.inputValue("dialog input[name=header-name]")).toBe("Authorization");
    await page.fill("dialog input[name=header-value]", `Bearer ${BEARER_SECRET}`);
    expect(await page.getAttribute("dialog input[name=header-value]", "type")).toBe("password");
    await shot(page, "02-connect-with-headers");
    await page.click("dialog button[type=submit]");
    await waitForState(page, bearerId, "connected");
    expect(await card(page, bearerId).textContent()).toContain("Authorization (values hidden)");
    expect(await page.content()).not.toContain(BEARER_SECRET);
    expect(bearer.seen.at(-1)?.authorization).toBe(`Bearer ${BEARER_SECRET}`);

    // Its proxy URL, copied, works with an MCP client.
    await card(page, bearerId).getByRole("button", { name: "Copy proxy url" }).click();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toBe(`${service.url}/api/v1/connectors/${bearerId}/mcp`);
    const { client, close } = await mcpClient(copied, ADMIN);
    expect(JSON.parse(toolText(await client.callTool({ name: "whoami", arguments: { name: "console" } }))).authorization).toBe(
      `Bearer ${BEARER_SECRET}`,
    );
    await close();

    // An OAuth server: connect opens the authorization server in a popup; the row turns connected when the callback
    // lands (through the events stream), and the popup is closed.
    const oauthId = await addConnector(page, oauthServer.url, "OAuth server");
    await connectWithOAuth(page, oauthId, "Connect OAuth server");
    expect(await card(page, oauthId).locator("[data-state-label]").textContent()).toContain("Connected");
    await shot(page, "03-oauth-connected");

    // The authorization server forgets the grant, and the MCP server stops taking the token: the proxy's refresh gets
    // invalid_grant, and the row turns disconnected, with the reason, without a reload.
    for (const grant of grants.splice(0)) await grant.destroy();
    oauthServer.rejectTokensSeenSoFar();
    const proxied = await fetch(`${service.url}/api/v1/connectors/${oauthId}/mcp`, {
      method: "POST",
      headers: {
        authorization: authHeader(ADMIN),
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
    expect(proxied.status).toBe(502);
    await waitForState(page, oauthId, "disconnected");
    const reason = await card(page, oauthId).locator("[data-reason]").textContent();
    expect(reason).toContain("refresh failed");
    expect(reason).toContain("invalid_grant");
    await page.waitForSelector("#status:has-text('OAuth server is disconnected')", { state: "attached" });
    await shot(page, "04-disconnected-invalid-grant");

    // Re-authorized through the popup again.
    await connectWithOAuth(page, oauthId, "Re-authorize OAuth server");
    expect(await card(page, oauthId).locator("[data-reason]").count()).toBe(0);
    await expectAccessible(page, "the connector list");
    await shot(page, "05-reauthorized");
    if (process.env.UPDATE_SCREENSHOT === "1") {
      await page.evaluate(() => (document.getElementById("toast")!.hidden = true));
      const height = await page.evaluate(() => Math.ceil(document.querySelector("main")!.getBoundingClientRect().bottom));
      await page.screenshot({ path: README_SCREENSHOT, clip: { x: 0, y: 0, width: 1280, height: Math.min(height, 860) } });
      console.log(`wrote ${README_SCREENSHOT}`);
    }
    // The dark scheme's colours pass too.
    // (Reduced motion: no colour transition is half-way when axe looks.)
    await page.emulateMedia({ colorScheme: "dark", reducedMotion: "reduce" });
    await expectAccessible(page, "the connector list, dark");
    await shot(page, "05-reauthorized-dark");
    await page.emulateMedia({ colorScheme: "light" });

    // An API token: shown once, with a copy button; it works; revoked, it does not.
    await page.click("nav a[data-view=tokens]");
    await page.waitForSelector("#view-tokens:not([hidden])");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("tokens-title");
    await page.fill("#token-name", "console agent");
    await page.click("#token-form button[type=submit]");
    await page.waitForSelector("dialog[open] input[data-secret]");
    await expectAccessible(page, "the new token dialog", "dialog[open]");
    const token = await page.inputValue("dialog[open] input[data-secret]");
    expect(token).toStartWith("cst_");
    await page.getByRole("button", { name: "Copy api token" }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(token);
    expect((await api("GET", "/api/v1/users/me", { as: { token } })).body.username).toBe(ADMIN.username);
    await shot(page, "06-token-shown-once");
    await page.click("dialog[open] button:text('Done')");
    await page.waitForSelector("dialog", { state: "detached" });
    expect(await page.content()).not.toContain(token);
    await page.locator("#token-list li", { hasText: "console agent" }).getByRole("button", { name: "Revoke" }).click();
    await page.click("dialog[open] button:text('Revoke')");
    await page.waitForSelector("#token-list li:has-text('console agent')", { state: "detached" });
    expect((await api("GET", "/api/v1/users/me", { as: { token } })).status).toBe(401);

    // Back to the list: disconnect (its credentials forgotten), then delete, each after a confirmation.
    await page.click("nav a[data-view=connectors]");
    await card(page, bearerId).getByRole("button", { name: "Disconnect Bearer server" }).click();
    await page.waitForSelector("dialog[open]");
    await page.click("dialog[open] button:text('Disconnect')");
    await waitForState(page, bearerId, "disconnected");
    expect((await api("GET", `/api/v1/connectors/${bearerId}`)).body).toMatchObject({ state: "disconnected", header_names: [] });
    expect(await card(page, bearerId).getByRole("button", { name: "Re-authorize Bearer server" }).count()).toBe(1);
    for (const [id, name] of [
      [oauthId, "OAuth server"],
      [bearerId, "Bearer server"],
    ] as const) {
      await card(page, id)
        .getByRole("button", { name: `Delete ${name}` })
        .click();
      await page.waitForSelector("dialog[open]");
      await page.click("dialog[open] button:text('Delete')");
      await card(page, id).waitFor({ state: "detached" });
      expect((await api("GET", `/api/v1/connectors/${id}`)).status).toBe(404);
    }
    await shot(page, "07-deleted");

    expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);

    // Signing out ends the session: its cookie no longer opens the API.
    await page.click("#sign-out");
    await page.waitForSelector("#view-signin:not([hidden])");
    expect((await context.request.get(`${service.url}/api/v1/session`)).status()).toBe(401);

    expect(problems).toEqual([]);
    expect(elsewhere).toEqual([]);
    await context.close();
  },
  60_000,
);

// A 401 with `WWW-Authenticate: Basic` makes a browser answer a page's fetch with its own sign-in prompt (Fetch §4.6,
// HTTP-network-or-cache fetch, step on 401); in headless Chromium the request would wait for a prompt nobody sees. The
// API answers a page's own requests (Sec-Fetch-Dest: empty) with a Bearer challenge instead (http/problem-plugin.ts).
test.skipIf(!available)(
  "a wrong password is refused with the service's words, without the browser's own sign-in prompt",
  async () => {
    const context = await browser.newContext();
    try {
      const { page } = await openConsole(context);
      await page.waitForSelector("#view-signin:not([hidden])");
      await page.fill("#signin-username", ADMIN.username);
      await page.fill("#signin-password", "not the password");
      await page.click("#signin-form button[type=submit]");
      await page.waitForSelector("#signin-error:not(:empty)", { timeout: 3000 });
      expect(await page.textContent("#signin-error")).toContain("password");
    } finally {
      await context.close();
    }
  },
  15_000,
);

test.skipIf(!available)(
  "a page of another origin cannot make changes with the console's session: its requests are refused and nothing is created",
  async () => {
    const context = await browser.newContext();
    const { page } = await openConsole(context);
    await signIn(page);
    const before = (await api("GET", "/api/v1/connectors?limit=100")).body.items.length;

    // Pages of other origins: another port on the same host (same site, so the SameSite=Strict cookie is sent and the
    // CSRF token and Origin check must refuse), and another host name (another site: no cookie at all).
    const target = `${service.url}/api/v1/connectors`;
    const evil = JSON.stringify({ url: "https://evil.example/mcp" });
    const attacker = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        const path = new URL(request.url).pathname;
        const html = (body: string) =>
          new Response(`<!doctype html><html><body>${body}</body></html>`, { headers: { "content-type": "text/html" } });
        if (path === "/fetch")
          return html(`<p id="result">pending</p><script>
          const send = (type) => fetch(${JSON.stringify(target)}, { method: "POST", credentials: "include", headers: { "content-type": type }, body: ${JSON.stringify(evil)} })
            .then((r) => "read " + r.status, () => "blocked");
          Promise.all([send("text/plain"), send("application/json")]).then((r) => (document.getElementById("result").textContent = r.join(",")));
        </script>`);
        if (path === "/form")
          return html(`<form method="POST" action="${target}" enctype="text/plain"><input type="hidden" name='{"url":"https://evil.example/form","x":"' value='"}'></form>
          <script>document.forms[0].submit()</script>`);
        return new Response("not found", { status: 404 });
      },
    });
    try {
      for (const origin of [`http://127.0.0.1:${attacker.port}`, `http://localhost:${attacker.port}`]) {
        const evilPage = await context.newPage();
        const refused: number[] = [];
        evilPage.on("response", (r) => {
          if (r.url() === target && r.request().method() === "POST") refused.push(r.status());
        });
        await evilPage.goto(`${origin}/fetch`);
        await evilPage.waitForFunction(() => document.getElementById("result")?.textContent !== "pending");
        // Neither answer could be read; the JSON one was not even sent (its preflight is never granted).
        expect(await evilPage.textContent("#result")).toBe("blocked,blocked");
        const [response] = await Promise.all([
          evilPage.waitForResponse((r) => r.url() === target && r.request().method() === "POST"),
          evilPage.goto(`${origin}/form`),
        ]);
        // Another port (same site, the cookie went along) or another site (no cookie): the browser says where the form
        // comes from, and the change is refused before any credential is looked at.
        const expected = 403;
        expect(response.status()).toBe(expected);
        expect(refused.every((status) => status === expected)).toBe(true);
        await evilPage.close();
      }
    } finally {
      attacker.stop(true);
    }
    const after = (await api("GET", "/api/v1/connectors?limit=100")).body.items;
    expect(after.length).toBe(before);
    expect(after.filter((c: { url: string }) => c.url.includes("evil.example"))).toEqual([]);
    // The console's own session still works (nothing above signed it out).
    expect((await context.request.get(`${service.url}/api/v1/session`)).status()).toBe(200);
    await context.close();
  },
  30_000,
);

test.skipIf(!available)(
  "at a phone's width (360 px) nothing overflows sideways, in any view or dialog; an administrator adds a user and an agent there",
  async () => {
    // Long names and URLs, the kind that push a layout wide.
    const long = await api("POST", "/api/v1/connectors", {
      body: {
        url: `${bearer.url}?${"very-long-query-parameter=value&".repeat(6)}`,
        metadata: { name: "A connector with a rather long name that must wrap", description: "x".repeat(300) },
      },
    });
    expect(long.status).toBe(201);
    await api("POST", `/api/v1/connectors/${long.body.id}/connect`, {
      body: { headers: { Authorization: `Bearer ${BEARER_SECRET}`, "X-A-Rather-Long-Header-Name-Indeed": "v" } },
    });
    const context = await browser.newContext({
      viewport: { width: 360, height: 780 },
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 2,
    });
    const { page, problems, elsewhere } = await openConsole(context);
    const overflow = () => page.evaluate(() => document.scrollingElement!.scrollWidth);
    await page.waitForSelector("#view-signin:not([hidden])");
    expect(await overflow()).toBeLessThanOrEqual(360);
    await signIn(page);
    await card(page, long.body.id).waitFor();
    expect(await overflow()).toBeLessThanOrEqual(360);
    await shot(page, "phone-connectors");

    await card(page, long.body.id).getByRole("button", { name: "Disconnect" }).waitFor();
    await page.click("#add-connector");
    await page.waitForSelector("dialog[open]");
    expect(await overflow()).toBeLessThanOrEqual(360);
    // A preset fills in the URL and the name.
    const [preset] = (await api("GET", "/api/v1/connectors/presets")).body.items;
    await page.selectOption("dialog select", { label: preset.metadata.name });
    expect(await page.inputValue("dialog input[type=url]")).toBe(preset.url);
    expect(await page.locator("dialog[open]").getByLabel("Name (optional)").inputValue()).toBe(preset.metadata.name);
    expect(
      await page.evaluate(
        () => document.querySelector("dialog[open]")!.scrollWidth <= document.querySelector("dialog[open]")!.clientWidth,
      ),
    ).toBe(true);
    await page.keyboard.press("Escape");
    await page.waitForSelector("dialog", { state: "detached" });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("add-connector");

    // Users: an administrator adds one.
    await page.click("nav a[data-view=users]");
    await page.click("#add-user");
    await page.waitForSelector("dialog[open]");
    await page.locator("dialog[open]").getByLabel("User name").fill("bob");
    await page.locator("dialog[open]").getByLabel("Password", { exact: true }).fill("bob-password-1");
    await page.selectOption("dialog select", "user");
    await page.click("dialog button[type=submit]");
    await page.waitForSelector("#user-list li:has-text('bob')");
    expect((await api("GET", "/api/v1/users")).body.items.map((u: { username: string }) => u.username)).toContain("bob");
    expect(await overflow()).toBeLessThanOrEqual(360);
    await shot(page, "phone-users");

    // Agents: one registered with its card given inline; its card URL is shown.
    await page.click("nav a[data-view=agents]");
    await page.click("#add-agent");
    await page.waitForSelector("dialog[open]");
    const agentCard = {
      name: "Console test agent",
      description: "Registered from the console",
      url: `${bearer.url.replace("/mcp", "")}/a2a`,
      version: "1.0.0",
      capabilities: {},
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [{ id: "s", name: "S", description: "d", tags: [] }],
    };
    await page
      .locator("dialog[open]")
      .getByLabel("Or the card itself (JSON)")
      .fill(JSON.stringify(agentCard, null, 2));
    await page.click("dialog button[type=submit]");
    const agent = page.locator("#agent-list li", { hasText: "Console test agent" });
    await agent.waitFor();
    const provider = (await api("GET", "/api/v1/providers")).body.items.find(
      (p: { name: string }) => p.name === "Console test agent",
    );
    expect(await agent.locator("input").first().inputValue()).toBe(provider.card_url);
    expect(await overflow()).toBeLessThanOrEqual(360);
    await shot(page, "phone-agents");

    for (const view of ["tokens", "account"]) {
      await page.click(`nav a[data-view=${view}]`);
      await page.waitForSelector(`#view-${view}:not([hidden])`);
      expect(await overflow(), view).toBeLessThanOrEqual(360);
      await shot(page, `phone-${view}`);
    }

    expect(problems).toEqual([]);
    expect(elsewhere).toEqual([]);
    await context.close();
  },
  40_000,
);
