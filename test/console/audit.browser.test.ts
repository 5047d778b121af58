import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { startTryItServer, type TryItServer } from "../peers/try-it-server";
import { readmeScreenshot, signInToConsole, watchPolicy } from "../support/browser";
import { CHROMIUM, chromiumAvailable, launchChromium } from "../support/chromium";
import { connectedConnector, mcpClient } from "../support/mcp";
import { ADMIN, startTestService, type TestService } from "../support/service";

// The console's Audit trail page in headless Chromium against the whole service on a loopback port: calls made by an
// MCP client through a proxy URL are listed newest first, a filter by tool narrows them, and the CSV download carries
// the same filtered records.
const available = chromiumAvailable;
if (!available) console.warn(`SKIPPED: the audit trail browser test needs ${CHROMIUM} (Debian package "chromium")`);

let server: TryItServer;
let service: TestService;
let browser: Browser;
let connectorId: string;

beforeAll(async () => {
  if (!available) return;
  server = await startTryItServer();
  service = await startTestService();
  connectorId = await connectedConnector(service.api, `${server.url}/mcp`);
  const { client, close } = await mcpClient(`${service.url}/api/v1/connectors/${connectorId}/mcp`);
  for (const message of ["one", "two", "three"]) await client.callTool({ name: "echo", arguments: { message } });
  await client.callTool({ name: "add", arguments: { a: 1, b: 2 } });
  await close();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  await service?.stop();
  await server?.stop();
});

test.skipIf(!available)(
  "the calls are listed newest first; a filter by tool narrows them; the CSV download has the same records",
  async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    const page = await context.newPage();
    const problems = watchPolicy(page);
    await page.goto(`${service.url}/`);
    await signInToConsole(page, ADMIN);
    await page.getByRole("link", { name: "Audit trail" }).click();
    await page.waitForSelector("#audit-rows tr");

    const calls = page.locator('#audit-rows tr:has(td:text-is("tools/call"))');
    expect(await calls.count()).toBe(4);
    // Newest first: the last call (add) heads the list.
    expect(await calls.first().locator("td").nth(2).textContent()).toBe("add");
    // The administrator sees the user column.
    expect(await page.isVisible('th:text-is("User")')).toBe(true);
    // The README's picture of the page: the heading, the filters and the records.
    if (process.env.UPDATE_SCREENSHOT === "1") {
      const top = (await page.locator("#view-audit").boundingBox())!;
      const table = (await page.locator("#view-audit table").boundingBox())!;
      const height = Math.ceil(Math.min(table.y + table.height + 16, 900) - top.y + 16);
      await readmeScreenshot(page, join(import.meta.dir, "audit.png"), { x: 0, y: top.y - 16, width: 1280, height });
    }

    await page.fill("#audit-name", "echo");
    await page.click("#audit-filters button[type=submit]");
    await page.waitForFunction(() => document.querySelectorAll("#audit-rows tr").length === 3);
    expect(await page.locator("#audit-rows tr td:nth-child(3)").allTextContents()).toEqual(["echo", "echo", "echo"]);

    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#audit-download-csv")]);
    const csv = readFileSync((await download.path())!, "utf8")
      .trimEnd()
      .split("\r\n");
    expect(csv[0]).toStartWith("id,at,user_id,");
    expect(csv).toHaveLength(4); // the header and the three echo calls
    expect(csv.slice(1).every((line) => line.includes(",tools/call,echo,result,"))).toBe(true);
    expect(problems).toEqual([]);
    await context.close();
  },
  60_000,
);
