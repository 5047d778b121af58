import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { startTryItServer, type TryItServer } from "../peers/try-it-server";
import { signInToConsole, watchPolicy } from "../support/browser";
import { CHROMIUM, chromiumAvailable, launchChromium } from "../support/chromium";
import { ADMIN, startTestService, type TestService } from "../support/service";

// The console's Virtual servers page in headless Chromium against the whole service on a loopback port: two connected
// connectors to two real MCP servers (the SDK's McpServer, the same tool names), a virtual server made of both from the
// page (prefixes typed there), its members' status and MCP URL on the card, "Try it" calling a prefixed tool through
// the virtual server, an edit that removes a member, and delete.
const available = chromiumAvailable;
if (!available) console.warn(`SKIPPED: the virtual servers browser test needs ${CHROMIUM} (Debian package "chromium")`);

let first: TryItServer;
let second: TryItServer;
let service: TestService;
let browser: Browser;
const connectors: { id: string; name: string }[] = [];

beforeAll(async () => {
  if (!available) return;
  [first, second] = await Promise.all([startTryItServer(), startTryItServer()]);
  service = await startTestService();
  for (const [name, server] of [
    ["Alpha", first],
    ["Beta", second],
  ] as const) {
    const created = await service.api("POST", "/api/v1/connectors", {
      body: { url: `${server.url}/mcp`, metadata: { name } },
    });
    expect(created.status).toBe(201);
    const connected = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {} });
    expect(connected.body.state).toBe("connected");
    connectors.push({ id: created.body.id, name });
  }
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  await service?.stop();
  await Promise.all([first?.stop(), second?.stop()]);
});

test.skipIf(!available)(
  "make a virtual server of two connectors from the page, see its members, call a prefixed tool in Try it, edit, delete",
  async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const problems = watchPolicy(page);
    await page.goto(`${service.url}/`);
    await signInToConsole(page, ADMIN);

    await page.getByRole("link", { name: "Virtual servers" }).click();
    await page.waitForSelector("#view-virtual:not([hidden])");
    // The empty state shows once the (empty) list has loaded: waited for, not read at once (a busy machine is slower).
    await page.waitForSelector("#virtual-empty", { state: "visible", timeout: 10_000 });

    // New: a name, both connectors, a prefix each (one typed wrong first: the page says so, nothing is sent).
    await page.click("#add-virtual");
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("Name", { exact: true }).fill("Both servers");
    const [alpha, beta] = connectors;
    await dialog.locator(`[data-member-include="${alpha!.id}"]`).check();
    await dialog.locator(`[data-member-prefix="${alpha!.id}"]`).fill("Alpha!");
    await dialog.locator(`[data-member-include="${beta!.id}"]`).check();
    await dialog.locator(`[data-member-prefix="${beta!.id}"]`).fill("b");
    await dialog.locator("button[type=submit]").click();
    await dialog.locator(".form-error:has-text('Prefix of Alpha')").waitFor();
    await dialog.locator(`[data-member-prefix="${alpha!.id}"]`).fill("a");
    await dialog.locator("button[type=submit]").click();
    await page.waitForSelector("dialog", { state: "detached" });

    const listed = await service.api("GET", "/api/v1/virtual-servers");
    expect(listed.body.items).toHaveLength(1);
    const vs = listed.body.items[0];
    expect(vs.members.map((m: { prefix: string }) => m.prefix).sort()).toEqual(["a", "b"]);
    const card = page.locator(`#virtual-list li[data-id="${vs.id}"]`);
    expect(await card.locator("input[readonly]").inputValue()).toBe(`${service.url}/api/v1/virtual-servers/${vs.id}/mcp`);
    expect(await card.locator("[data-member][data-status=ok]").count()).toBe(2);
    expect(await card.locator(".members").textContent()).toContain("Alpha");

    // Try it, through the virtual server's own MCP URL with the console session: both members' tools, prefixed.
    await card.getByRole("button", { name: "Try it Both servers" }).click();
    const tryIt = page.locator("dialog[open]");
    await tryIt.locator("[data-tryit-status]:has-text('Connected')").waitFor();
    const tools = await tryIt.locator("[data-tool-select] option").allTextContents();
    expect(tools).toContain("a__echo");
    expect(tools).toContain("b__echo");
    await tryIt.locator("[data-tool-select]").selectOption({ label: "b__echo" });
    await tryIt.getByLabel("message (required)").fill("through the virtual server");
    await tryIt.getByRole("button", { name: "Call tool" }).click();
    await tryIt.locator("[data-result=ok] [data-result-text]").waitFor();
    expect(await tryIt.locator("[data-result-text]").textContent()).toBe("echo: through the virtual server");
    await page.keyboard.press("Escape");
    await page.waitForSelector("dialog", { state: "detached" });

    // Edit: Alpha leaves, the tool mode becomes search.
    await card.getByRole("button", { name: "Edit Both servers" }).click();
    const edit = page.locator("dialog[open]");
    await edit.locator(`[data-member-include="${alpha!.id}"]`).uncheck();
    await edit.getByLabel("Tools").selectOption("search");
    await edit.locator("button[type=submit]").click();
    await page.waitForSelector("dialog", { state: "detached" });
    const edited = await service.api("GET", `/api/v1/virtual-servers/${vs.id}`);
    expect(edited.body.members.map((m: { connector_id: string }) => m.connector_id)).toEqual([beta!.id]);
    expect(edited.body.tool_mode).toBe("search");
    expect(await card.locator("[data-member]").count()).toBe(1);

    // Delete, after saying yes.
    await card.getByRole("button", { name: "Delete Both servers" }).click();
    await page.locator("dialog[open]").getByRole("button", { name: "Delete" }).click();
    await page.waitForSelector(`#virtual-list li[data-id="${vs.id}"]`, { state: "detached" });
    expect((await service.api("GET", `/api/v1/virtual-servers/${vs.id}`)).status).toBe(404);
    expect(problems).toEqual([]);
    await context.close();
  },
  60_000,
);
