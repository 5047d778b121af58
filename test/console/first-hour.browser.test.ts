import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { startService, type RunningService } from "../../src/cli/serve";
import { CHROMIUM, chromiumAvailable, launchChromium } from "../support/chromium";
import { apiClient } from "../support/service";

// A newcomer's first hour, in headless Chromium against the whole service in this process, from an empty SQLite
// database: the administrator's password read from the start-up banner (the service generated it), sign in, add the
// demo connector from its preset, connect it (no popup: it needs no sign-in), call `echo` through "Try it", then take
// the TypeScript SDK configuration the card offers and run it as copied, with an API token of the person's.
const available = chromiumAvailable;
if (!available) console.warn(`SKIPPED: the first-hour browser test needs ${CHROMIUM} (Debian package "chromium")`);

let dir: string;
let service: RunningService;
let browser: Browser;
const out: string[] = [];

beforeAll(async () => {
  if (!available) return;
  dir = mkdtempSync(join(tmpdir(), "cs-first-hour-"));
  service = await startService(
    {
      SERVER__PORT: "0",
      DATABASE__PATH: join(dir, "connector-service.db"),
      SECRETS__KEY: randomBytes(32).toString("base64"),
      SCHEDULER__INTERVAL_SECONDS: "3600",
    },
    { writeLog: (line) => out.push(line), banner: true },
  );
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test.skipIf(!available)(
  "from an empty database: the banner's password signs in, the demo preset connects without a popup, echo answers in Try it, the SDK configuration runs as copied",
  async () => {
    const banner = out.join("\n");
    const password = banner.match(/^ {2}Password +(\S+) {3}\(generated now/m)?.[1];
    expect(password, banner).toBeDefined();

    const started = performance.now();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    const popups: string[] = [];
    page.on("popup", (p) => popups.push(p.url()));
    await page.goto(`${service.url}/`);
    await page.waitForSelector("#view-signin:not([hidden])");
    await page.fill("#signin-username", "admin");
    await page.fill("#signin-password", password!);
    await page.click("#signin-form button[type=submit]");
    await page.waitForSelector("#view-connectors:not([hidden])");

    // The demo preset: the URL and the name come with it.
    await page.click("#add-connector");
    const add = page.locator("dialog[open]");
    await add.getByLabel("Start from").selectOption({ label: "Demo server — works offline, no sign-in" });
    expect(await add.locator("input[type=url]").inputValue()).toBe("mcp+stdio://demo");
    await add.locator("button[type=submit]").click();
    await page.waitForSelector("dialog", { state: "detached" });
    const row = page.locator("#connector-list li", { has: page.locator("h2", { hasText: "Demo server" }) }).first();
    const id = (await row.getAttribute("data-id"))!;
    const card = page.locator(`#connector-list li[data-id="${id}"]`);
    await card.getByRole("button", { name: /^Connect / }).click();
    await page.click("dialog[open] button[type=submit]");
    await page.waitForSelector(`#connector-list li[data-id="${id}"][data-state="connected"]`, { timeout: 30_000 });
    expect(popups).toEqual([]);

    // Try it: the demo's tools, and echo from the generated form.
    await card.getByRole("button", { name: /^Try it / }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.locator("[data-tryit-status]:has-text('Connected to')").waitFor({ timeout: 30_000 });
    // Listed by their titles (the MCP tool's `title`).
    const tools = await dialog.locator("[data-tool-select] option").allTextContents();
    expect(tools).toEqual(expect.arrayContaining(["Echo", "Add", "Countdown", "Ask the user"]));
    await dialog.locator("[data-tool-select]").selectOption({ label: "Echo" });
    await dialog.getByLabel("text (required)").fill("hello from the first hour");
    await dialog.getByRole("button", { name: "Call tool" }).click();
    await dialog.locator("[data-result=ok] [data-result-text]").waitFor({ timeout: 30_000 });
    expect(await dialog.locator("[data-result-text]").textContent()).toBe("hello from the first hour");
    const toToolCall = performance.now() - started;
    console.log(`first hour, scripted in the console: sign-in to echo's answer in ${(toToolCall / 1000).toFixed(1)} s`);
    await dialog.locator("button[data-close]").click();

    // The SDK configuration as the card gives it, with a token of the administrator's.
    await card.getByRole("button", { name: /^Use from a client / }).click();
    const sdk = (await page.locator("dialog[open] pre[data-config=sdk]").textContent())!;
    await page.locator("dialog[open] button[data-close]").click();
    const api = apiClient(service.url, { username: "admin", password: password! });
    const token = (await api("POST", "/api/v1/tokens", { body: { name: "first hour" } })).body.token as string;
    const snippets = mkdtempSync(join(import.meta.dir, ".snippet-"));
    try {
      writeFileSync(join(snippets, "client.ts"), sdk);
      const run = Bun.spawn(["bun", join(snippets, "client.ts")], {
        env: { ...process.env, CS_TOKEN: token },
        stdout: "pipe",
        stderr: "pipe",
        timeout: 30_000,
      });
      const [stdout, stderr, code] = await Promise.all([
        new Response(run.stdout).text(),
        new Response(run.stderr).text(),
        run.exited,
      ]);
      expect(code, stderr).toBe(0);
      expect(stdout).toContain("echo");
    } finally {
      rmSync(snippets, { recursive: true, force: true });
    }
    expect(problems).toEqual([]);
    await context.close();
  },
  120_000,
);
