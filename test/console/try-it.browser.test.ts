import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { signInToConsole } from "../support/browser";
import { pagedToolsServer } from "../peers/paged-tools";
import { scriptedOAuth } from "../peers/scripted-oauth";
import { startTryItServer, type TryItServer } from "../peers/try-it-server";
import { CHROMIUM, chromiumAvailable, launchChromium } from "../support/chromium";
import { ADMIN, startTestService, type TestService } from "../support/service";

// The console in headless Chromium, opened at `localhost` while the service's public URL says 127.0.0.1 (the service
// in this process on a loopback port): sign in, add a connector to a real MCP server (the SDK's McpServer over
// Streamable HTTP), connect it without any popup, "Try it" (list tools, prompts, resources; call echo from the
// generated form, a tool with progress, raw JSON arguments, an isError result), take the SDK configuration and run
// it, and change the connector's URL from its card. Then tools in cursor pages, axe over the new dialogs, the curl
// session run as the dialog gives it, and a connector waiting for OAuth with its link on the card.
const available = chromiumAvailable;
if (!available) console.warn(`SKIPPED: the Try it browser test needs ${CHROMIUM} (Debian package "chromium")`);

let server: TryItServer;
let service: TestService;
let browser: Browser;
let localUrl: string;
/** Screenshots of the steps: TEST_ARTIFACTS_DIR, else a fresh folder under the OS temp dir (printed). */
const ARTIFACTS = process.env.TEST_ARTIFACTS_DIR
  ? join(process.env.TEST_ARTIFACTS_DIR, "console-try-it")
  : mkdtempSync(join(tmpdir(), "cs-try-it-screens-"));
const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
const AXE = readFileSync(Bun.resolveSync("axe-core/axe.min.js", import.meta.dir), "utf8");

/** axe-core over one part of the page (evaluated through DevTools: the CSP refuses a <script>): nothing serious. */
async function expectAccessible(page: Page, what: string, include: string) {
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE);
  const violations = await page.evaluate(async (context) => {
    const axe = (
      window as unknown as {
        axe: {
          run(c: unknown, o: unknown): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe;
    const result = await axe.run({ include: [context] }, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
    }));
  }, include);
  expect(
    violations.filter((v) => v.impact === "serious" || v.impact === "critical"),
    what,
  ).toEqual([]);
}

/** A loopback server whose handler is given after its URL is known (the scripted OAuth peers name their own URLs). */
function lateServer() {
  let handler: (request: Request) => Response | Promise<Response> = () => new Response("not yet", { status: 503 });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => handler(request) });
  return {
    url: `http://127.0.0.1:${server.port}`,
    serve: (h: typeof handler) => void (handler = h),
    stop: () => server.stop(true),
  };
}

beforeAll(async () => {
  if (!available) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  console.log(`Try it screenshots: ${ARTIFACTS}`);
  server = await startTryItServer();
  service = await startTestService();
  localUrl = service.url.replace("127.0.0.1", "localhost");
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  await service?.stop();
  await server?.stop();
});

const card = (page: Page, id: string) => page.locator(`#connector-list li[data-id="${id}"]`);

/** A page at `localhost`, watched for script errors and CSP refusals. */
async function openAtLocalhost() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  const popups: string[] = [];
  page.on("popup", (p) => popups.push(p.url()));
  await page.goto(`${localUrl}/`);
  await page.waitForSelector("#view-signin:not([hidden])");
  // The sign-in page says how the first administrator signs in.
  expect(await page.textContent("#signin-first-time")).toContain("AUTH__ADMIN_PASSWORD");
  await signInToConsole(page, ADMIN);
  return { page, problems, popups, context };
}

test.skipIf(!available)(
  "at localhost: add and connect an open server without a popup, try its tools, run the SDK configuration, change its URL",
  async () => {
    const { page, problems, popups, context } = await openAtLocalhost();

    // Add a connector (a change, at localhost: no 403) and connect it: an open server, so no window opens.
    await page.click("#add-connector");
    await page.fill("dialog input[type=url]", `${server.url}/mcp`);
    await page.locator("dialog[open]").getByLabel("Name (optional)").fill("Try server");
    await page.click("dialog button[type=submit]");
    await page.waitForSelector("dialog", { state: "detached" });
    const row = page.locator("#connector-list li", { has: page.locator("h2", { hasText: "Try server" }) }).first();
    const id = (await row.getAttribute("data-id"))!;
    await card(page, id).getByRole("button", { name: "Connect Try server" }).click();
    await page.click("dialog button[type=submit]");
    await page.waitForSelector(`#connector-list li[data-id="${id}"][data-state="connected"]`);
    expect(popups).toEqual([]);

    // The proxy URL shown is the public URL's, not the name the console was opened at.
    const proxyUrl = `${service.url}/api/v1/connectors/${id}/mcp`;
    expect(await card(page, id).locator("input[readonly]").inputValue()).toBe(proxyUrl);

    // Try it: tools, prompts and resources are listed.
    await card(page, id).getByRole("button", { name: "Try it Try server" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.locator("[data-tryit-status]:has-text('Connected to try-it-server')").waitFor();
    expect(await dialog.locator("[data-tryit-status]").textContent()).toContain("5 tools, 1 prompts, 1 resources");
    const toolNames = await dialog.locator("[data-tool-select] option").allTextContents();
    expect(toolNames).toEqual(["echo", "add", "greet", "slow", "fail"]);
    expect(server.sessions.started).toBeGreaterThanOrEqual(1);

    // echo from the generated form: a required string field.
    const message = dialog.getByLabel("message (required)");
    expect(await message.getAttribute("required")).not.toBeNull();
    await dialog.getByRole("button", { name: "Call tool" }).click();
    await dialog.locator("[data-result=error]:has-text('message is required')").waitFor();
    await message.fill("hello from the console");
    await dialog.getByRole("button", { name: "Call tool" }).click();
    await dialog.locator("[data-result=ok] [data-result-text]").waitFor();
    expect(await dialog.locator("[data-result-text]").textContent()).toBe("echo: hello from the console");

    // An enum and a boolean.
    await dialog.locator("[data-tool-select]").selectOption({ label: "greet" });
    await dialog.getByLabel("style (required)").selectOption({ label: "loud" });
    await dialog.getByLabel("exclaim").selectOption("true");
    await dialog.getByRole("button", { name: "Call tool" }).click();
    await dialog.locator("[data-result-text]:has-text('HELLO YOU!')").waitFor();

    // Raw JSON arguments, and structured content shown as JSON.
    await dialog.locator("[data-tool-select]").selectOption({ label: "add" });
    await dialog.locator("[data-raw-toggle]").check();
    await dialog.locator("[data-raw-args]").fill('{"a": 1.5, "b": 2}');
    await dialog.getByRole("button", { name: "Call tool" }).click();
    await dialog.locator("[data-structured]").waitFor();
    expect(JSON.parse((await dialog.locator("[data-structured]").textContent())!)).toEqual({ sum: 3.5 });
    // A JSON-RPC error: the server refuses arguments that fail its schema.
    await dialog.locator("[data-raw-args]").fill('{"a": "x", "b": 2}');
    await dialog.getByRole("button", { name: "Call tool" }).click();
    await dialog.locator("[data-result=error], [data-result=tool-error]").first().waitFor();
    await dialog.locator("[data-raw-toggle]").uncheck();

    // Progress notifications on the event stream, then the result.
    await dialog.locator("[data-tool-select]").selectOption({ label: "slow" });
    await dialog.getByLabel("steps (required)").fill("4");
    await dialog.getByRole("button", { name: "Call tool" }).click();
    await dialog.locator("[data-progress-text]:has-text('step')").waitFor();
    await dialog.locator("[data-result-text]:has-text('counted to 4')").waitFor();
    expect(await dialog.locator("[data-last-progress]").textContent()).toBe("Progress: 4 of 4 — step 4");
    await shot(page, "01-try-it-progress");

    // A tool that reports an error (isError).
    await dialog.locator("[data-tool-select]").selectOption({ label: "fail" });
    await dialog.getByRole("button", { name: "Call tool" }).click();
    await dialog.locator("[data-result=tool-error]:has-text('this tool always fails')").waitFor();

    // The resource reads.
    await dialog.locator("summary:has-text('Resources (1)')").click();
    await dialog.getByRole("button", { name: "Read readme" }).click();
    await dialog.locator('[data-result=resource]:has-text("the readme\'s text")').waitFor();

    // Closing ends the MCP session (DELETE).
    const ended = server.sessions.ended;
    await dialog.locator("button[data-close]").click();
    for (let i = 0; i < 50 && server.sessions.ended === ended; i++) await Bun.sleep(20);
    expect(server.sessions.ended).toBe(ended + 1);

    // Every call went through the proxy as the person, and is in the audit trail.
    const audit = await service.api("GET", `/api/v1/audit?connector_id=${id}&method=tools/call`);
    const calls = audit.body.items as { name: string; credential: string }[];
    expect(calls.map((c) => c.name)).toContain("echo");
    expect(new Set(calls.map((c) => c.credential))).toEqual(new Set(["session"]));

    // The SDK configuration, as copied, with a real token: it lists the tools and calls the first one Try it saw.
    await card(page, id).getByRole("button", { name: "Use from a client Try server" }).click();
    const sdk = (await page.locator("dialog[open] pre[data-config=sdk]").textContent())!;
    await shot(page, "02-client-configurations");
    for (const kind of ["vscode", "desktop", "cursor", "curl"])
      expect(await page.locator(`dialog[open] pre[data-config=${kind}]`).textContent()).toContain(proxyUrl);
    expect(sdk).toContain(proxyUrl);
    await page.locator("dialog[open] button[data-close]").click();
    const token = (await service.api("POST", "/api/v1/tokens", { body: { name: "sdk snippet" } })).body.token as string;
    const dir = mkdtempSync(join(import.meta.dir, ".snippet-"));
    try {
      writeFileSync(
        join(dir, "client.ts"),
        sdk.replace('"echo", arguments: {}', '"echo", arguments: { message: "from the SDK" }'),
      );
      // Not spawnSync: the service answers from this very process.
      const run = Bun.spawn(["bun", join(dir, "client.ts")], {
        env: { ...process.env, CS_TOKEN: token },
        stdout: "pipe",
        stderr: "pipe",
        timeout: 30_000,
      });
      const [out, err, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
      expect(code, err).toBe(0);
      expect(out).toContain("echo");
      expect(out).toContain("echo: from the SDK");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    // Change the URL from the card: the connector disconnects with the reason, then connects at the new URL.
    await card(page, id).getByRole("button", { name: "Edit Try server" }).click();
    await page.locator("dialog[open]").getByLabel("MCP server URL").fill(`${server.url}/moved`);
    await page.click("dialog[open] button[type=submit]");
    await page.waitForSelector(`#connector-list li[data-id="${id}"][data-state="disconnected"]`);
    expect(await card(page, id).locator("[data-reason]").textContent()).toContain(`to ${server.url}/moved`);
    expect(await card(page, id).locator("p.url").textContent()).toBe(`${server.url}/moved`);
    await shot(page, "03-url-changed");
    await card(page, id).getByRole("button", { name: "Re-authorize Try server" }).click();
    await page.click("dialog button[type=submit]");
    await page.waitForSelector(`#connector-list li[data-id="${id}"][data-state="connected"]`);
    expect(popups).toEqual([]);
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body.url).toBe(`${server.url}/moved`);

    expect(problems).toEqual([]);
    await context.close();
  },
  90_000,
);

test.skipIf(!available)(
  "tools in cursor pages over event streams are all listed; the dialogs are accessible; the curl session runs as written; a connector waiting for OAuth shows its link, in one window",
  async () => {
    const { page, problems, popups, context } = await openAtLocalhost();
    // A server whose tools come two to a page (nextCursor), answered as event streams.
    const paged = pagedToolsServer(["t1", "t2", "t3", "t4", "t5"], 2, false);
    const pagedServer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: paged.handler });
    const oauthAs = lateServer();
    const oauthMcp = lateServer();
    try {
      const created = await service.api("POST", "/api/v1/connectors", {
        body: { url: `http://127.0.0.1:${pagedServer.port}/mcp`, metadata: { name: "Paged" } },
      });
      const id = created.body.id as string;
      expect((await service.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} })).body.state).toBe("connected");
      await page.waitForSelector(`#connector-list li[data-id="${id}"][data-state="connected"]`);
      await card(page, id).getByRole("button", { name: "Try it Paged" }).click();
      const dialog = page.locator("dialog[open]");
      await dialog.locator("[data-tryit-status]:has-text('5 tools')").waitFor();
      expect(await dialog.locator("[data-tool-select] option").allTextContents()).toEqual(["t1", "t2", "t3", "t4", "t5"]);
      await dialog.getByRole("button", { name: "Call tool" }).click();
      await dialog.locator("[data-result=ok]").waitFor();
      await expectAccessible(page, "the Try it dialog", "dialog[open]");
      await dialog.locator("button[data-close]").click();

      // The curl session, as the dialog gives it, with a real token: initialize, initialized, tools/list, tools/call, DELETE.
      await card(page, id).getByRole("button", { name: "Use from a client Paged" }).click();
      await expectAccessible(page, "the client configurations", "dialog[open]");
      const curl = (await page.locator("dialog[open] pre[data-config=curl]").textContent())!;
      await page.locator("dialog[open] button[data-close]").click();
      const token = (await service.api("POST", "/api/v1/tokens", { body: { name: "curl snippet" } })).body.token as string;
      const run = Bun.spawn(["bash", "-c", curl.replace("YOUR_API_TOKEN", token)], {
        stdout: "pipe",
        stderr: "pipe",
        timeout: 30_000,
      });
      const [out, err, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
      expect(code, err).toBe(0);
      // tools/list answers its first page (with its cursor); the call is of the first tool Try it saw.
      expect(out).toContain('"nextCursor":"2"');
      expect(out).toContain('{"result":{"content":[{"type":"text","text":"called t1"}]},"jsonrpc":"2.0","id":3}');

      // An OAuth server: connecting opens one window (the sign-in), and the card shows the link, prominently.
      const oauth = scriptedOAuth({ as: oauthAs.url, mcp: oauthMcp.url });
      oauthAs.serve(oauth.authorizationServer);
      oauthMcp.serve(oauth.mcpServer);
      const waiting = await service.api("POST", "/api/v1/connectors", {
        body: { url: `${oauthMcp.url}/mcp`, metadata: { name: "Needs sign-in" } },
      });
      const oid = waiting.body.id as string;
      await page.waitForSelector(`#connector-list li[data-id="${oid}"]`);
      const before = popups.length;
      await card(page, oid).getByRole("button", { name: "Connect Needs sign-in" }).click();
      await page.click("dialog button[type=submit]");
      await page.waitForSelector(`#connector-list li[data-id="${oid}"][data-state="auth_required"]`);
      const link = card(page, oid).locator("a[data-auth-link]");
      await link.waitFor();
      expect(await link.getAttribute("href")).toStartWith(`${oauthAs.url}/authorize?`);
      expect(await link.getAttribute("rel")).toBe("noopener noreferrer");
      for (let i = 0; i < 50 && popups.length === before; i++) await Bun.sleep(20);
      expect(popups.length).toBe(before + 1);
      await expectAccessible(page, "a card waiting for a sign-in", `#connector-list li[data-id="${oid}"]`);
      await shot(page, "04-waiting-for-sign-in");
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      pagedServer.stop(true);
      await oauthAs.stop();
      await oauthMcp.stop();
    }
  },
  90_000,
);
