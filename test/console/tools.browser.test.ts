import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { pagedToolsServer } from "../peers/paged-tools";
import { join } from "node:path";
import { readmeScreenshot, signInToConsole, watchPolicy } from "../support/browser";
import { CHROMIUM, chromiumAvailable, launchChromium } from "../support/chromium";
import { mcpClient, proxyUrl, toolText } from "../support/mcp";
import { ADMIN, startTestService, type TestService } from "../support/service";
import { waitFor } from "../support/wait";

// A connector's Tools dialog in headless Chromium against the whole service on a loopback port, with a real MCP server
// (the SDK's, paged tools) a test changes between listings: a policy edited there (a bad name refused at its field,
// then a tool denied) hides the tool from an MCP SDK client at the proxy URL; under strict pinning a changed
// description shows as a diff in the dialog, and approving it there makes the tool listed and callable again.
const available = chromiumAvailable;
if (!available) console.warn(`SKIPPED: the tools browser test needs ${CHROMIUM} (Debian package "chromium")`);

let service: TestService;
let browser: Browser;
const upstreams: { stop(): void }[] = [];

beforeAll(async () => {
  if (!available) return;
  service = await startTestService();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  await service?.stop();
  for (const upstream of upstreams) upstream.stop();
});

/** A real MCP server on loopback and a connected connector named `name` to it. */
async function connectedServer(name: string) {
  const tools = pagedToolsServer(["alpha", "beta", "gamma"], 10);
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: tools.handler });
  upstreams.push({ stop: () => server.stop(true) });
  const created = await service.api("POST", "/api/v1/connectors", {
    body: { url: `http://127.0.0.1:${server.port}/mcp`, metadata: { name } },
  });
  const connected = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {} });
  expect(connected.body.state).toBe("connected");
  return { tools, id: created.body.id as string };
}

async function signedIn() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = watchPolicy(page);
  await page.goto(`${service.url}/`);
  await signInToConsole(page, ADMIN);
  return { context, page, problems };
}

async function openToolsDialog(page: Page, id: string, name: string) {
  const card = page.locator(`#connector-list li[data-id="${id}"]`);
  await card.getByRole("button", { name: `Tools ${name}` }).click();
  const dialog = page.locator("dialog[open]");
  await dialog.locator("[data-tools-status]:has-text('3 tools')").waitFor();
  return { card, dialog };
}

const listedNames = async (client: Awaited<ReturnType<typeof mcpClient>>["client"]) =>
  (await client.listTools()).tools.map((tool) => tool.name);

test.skipIf(!available)(
  "deny a tool in the Tools dialog: a bad name is refused at its field, then the tool is gone from an MCP client's list",
  async () => {
    const { id } = await connectedServer("Paged");
    const mcp = await mcpClient(proxyUrl(service, id), ADMIN);
    expect(await listedNames(mcp.client)).toEqual(["alpha", "beta", "gamma"]);

    const { context, page, problems } = await signedIn();
    const { dialog } = await openToolsDialog(page, id, "Paged");
    expect(await dialog.locator("[data-tool] strong").allTextContents()).toEqual(["alpha", "beta", "gamma"]);

    // A name MCP does not allow: the API's 422 is shown under that field, and nothing is saved.
    const rename = dialog.getByLabel("Name clients see for alpha");
    await rename.fill("two words");
    await dialog.getByRole("button", { name: "Save", exact: true }).click();
    await dialog.locator("[aria-invalid=true]").waitFor();
    expect(await rename.getAttribute("aria-invalid")).toBe("true");
    const describedBy = (await rename.getAttribute("aria-describedby"))!;
    expect(await dialog.locator(`[id="${describedBy}"]`).textContent()).toContain("1 to 128 of A-Z a-z 0-9");
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body.tool_policy).toBeNull();

    await rename.fill("");
    await dialog.getByLabel("Shown to clients: beta").uncheck();
    await dialog.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator("#status:has-text('tool policy and rate limits of Paged were saved')").waitFor();
    expect(await rename.getAttribute("aria-invalid")).toBeNull();
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body).toMatchObject({
      tool_policy: { deny: ["beta"] },
      rate_limits: null,
    });

    // The MCP client at the proxy URL no longer sees it; the dialog, opened again, still lists it (unticked).
    expect(await listedNames(mcp.client)).toEqual(["alpha", "gamma"]);
    await page.keyboard.press("Escape");
    const again = await openToolsDialog(page, id, "Paged");
    expect(await again.dialog.getByLabel("Shown to clients: beta").isChecked()).toBe(false);
    expect(await again.dialog.getByLabel("Shown to clients: alpha").isChecked()).toBe(true);
    expect(problems).toEqual([]);
    await mcp.close();
    await context.close();
  },
  60_000,
);

test.skipIf(!available)(
  "strict pinning: a changed description shows as a diff in the Tools dialog; approving it there makes the tool callable",
  async () => {
    const { tools, id } = await connectedServer("Pinned");
    const { context, page, problems } = await signedIn();
    const first = await openToolsDialog(page, id, "Pinned");
    await first.dialog.getByLabel("Pinning").selectOption("strict");
    await first.dialog.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator("#status:has-text('tool policy and rate limits of Pinned were saved')").waitFor();
    await page.keyboard.press("Escape");

    // The first listing is the approved one (written beside the request: wait for it).
    const mcp = await mcpClient(proxyUrl(service, id), ADMIN);
    expect(await listedNames(mcp.client)).toEqual(["alpha", "beta", "gamma"]);
    await waitFor("the first listing pinned", async () => {
      return (await service.api("GET", `/api/v1/connectors/${id}`)).body.tools_pinned_at !== null;
    });

    tools.descriptions.gamma = "Reads your mail\nand forwards it";
    expect(await listedNames(mcp.client)).toEqual(["alpha", "beta"]);
    // A call is judged by the pins the listing wrote (beside it): wait for that write.
    await waitFor("the change recorded", async () => {
      return (await service.api("GET", `/api/v1/connectors/${id}`)).body.tool_changes.length === 1;
    });
    await expect(mcp.client.callTool({ name: "gamma", arguments: {} })).rejects.toThrow(/approval/);

    // The card says so (the events stream), and its button opens the diff.
    const card = page.locator(`#connector-list li[data-id="${id}"]`);
    await card.locator("[data-tool-changes]:has-text('1 tool changed since approved: gamma')").waitFor();
    await card.getByRole("button", { name: "Review changes of Pinned" }).click();
    const dialog = page.locator("dialog[open]");
    const change = dialog.locator('[data-change="gamma"]');
    await change.waitFor().catch(async (e) => {
      throw new Error(`${e.message}\n${await dialog.innerText()}`);
    });
    expect(await change.locator("h4").textContent()).toContain("Changed");
    expect(await change.locator("[data-part]").evaluateAll((parts) => parts.map((p) => p.getAttribute("data-part")))).toEqual([
      "Description",
    ]);
    expect(await change.locator("pre.diff span").allTextContents()).toEqual([
      "− The server's gamma\n",
      "+ Reads your mail\n",
      "+ and forwards it\n",
    ]);
    expect(await dialog.locator('[data-tool="gamma"]').textContent()).toContain("Changed: needs approval");
    // The README's picture of a changed tool under review: the dialog from its title to the changed tool's policy row.
    if (process.env.UPDATE_SCREENSHOT === "1") {
      const box = (await dialog.boundingBox())!;
      const end = (await dialog.locator('[data-tool="gamma"]').boundingBox())!;
      const height = Math.min(end.y + end.height + 16, box.y + box.height) - box.y;
      await readmeScreenshot(page, join(import.meta.dir, "tools-diff.png"), { ...box, height: Math.ceil(height) });
    }

    await change.getByRole("button", { name: "Approve gamma" }).click();
    await page.locator("#status:has-text('Approved gamma')").waitFor();
    await change.waitFor({ state: "detached" });
    await card.locator("[data-tool-changes]").waitFor({ state: "detached" });
    expect(await dialog.locator('[data-tool="gamma"]').textContent()).not.toContain("needs approval");

    expect(await listedNames(mcp.client)).toEqual(["alpha", "beta", "gamma"]);
    expect(toolText(await mcp.client.callTool({ name: "gamma", arguments: {} }))).toBe("called gamma");
    expect(problems).toEqual([]);
    await mcp.close();
    await context.close();
  },
  60_000,
);

test.skipIf(!available)(
  "rate limits in the Tools dialog: an out-of-range value is refused at its field; a tool's limit then answers the agent",
  async () => {
    const { id } = await connectedServer("Limited");
    const { context, page, problems } = await signedIn();
    const { dialog } = await openToolsDialog(page, id, "Limited");
    const perMinute = dialog.getByLabel("Requests per minute");
    const gamma = dialog.getByLabel("Calls per minute of gamma");
    expect(await perMinute.inputValue()).toBe("");

    // 0 is not a limit: the API's 422 is shown under that field, and nothing is saved.
    await gamma.fill("0");
    await dialog.getByRole("button", { name: "Save", exact: true }).click();
    await dialog.locator("[aria-invalid=true]").waitFor();
    expect(await gamma.getAttribute("aria-invalid")).toBe("true");
    expect(await dialog.locator(`[id="${await gamma.getAttribute("aria-describedby")}"]`).textContent()).toContain("1 to");
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body.rate_limits).toBeNull();

    // gamma renamed in the same save: its limit follows it to the name clients call.
    await gamma.fill("1");
    await perMinute.fill("600");
    await dialog.getByLabel("Name clients see for gamma").fill("delta");
    await dialog.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator("#status:has-text('rate limits of Limited were saved')").waitFor();
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body.rate_limits).toEqual({
      requests_per_minute: 600,
      tools: { delta: 1 },
    });

    // The agent's second call in the minute is answered in the server's place, as a tool result it can read.
    const mcp = await mcpClient(proxyUrl(service, id), ADMIN);
    expect(toolText(await mcp.client.callTool({ name: "delta", arguments: {} }))).toBe("called gamma");
    const limited = await mcp.client.callTool({ name: "delta", arguments: {} });
    expect(limited.isError).toBe(true);
    expect(toolText(limited)).toContain("Rate limit reached");

    // Opened again, the dialog shows what is saved.
    await page.keyboard.press("Escape");
    const again = await openToolsDialog(page, id, "Limited");
    expect(await again.dialog.getByLabel("Requests per minute").inputValue()).toBe("600");
    expect(await again.dialog.getByLabel("Calls per minute of gamma").inputValue()).toBe("1");
    expect(problems).toEqual([]);
    await mcp.close();
    await context.close();
  },
  60_000,
);
