import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { type Browser } from "playwright-core";
import { CHROMIUM, launchChromium } from "../support/chromium";
import { framedUrl, watchPolicy } from "../support/browser";
import { ADMIN, startTestService, type TestService } from "../support/service";

// Debian's Chromium (installed by .ci/run when missing); without it this test is skipped, and says so.
const available = existsSync(CHROMIUM);
if (!available) console.warn(`SKIPPED: the Swagger UI browser test needs ${CHROMIUM} (Debian package "chromium")`);

let service: TestService;
let browser: Browser;
beforeAll(async () => {
  if (!available) return;
  service = await startTestService();
  browser = await launchChromium();
});
afterAll(async () => {
  if (!available) return;
  await browser.close();
  await service.stop();
});

test.skipIf(!available)(
  "Swagger UI renders every operation in a real browser without asking any other host for anything, under its policy",
  async () => {
    const page = await browser.newPage();
    const refused = watchPolicy(page);
    const elsewhere: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(service.url) && !r.url().startsWith("data:")) elsewhere.push(r.url());
    });
    await page.goto(`${service.url}/docs`);
    await page.waitForSelector(".opblock");
    expect(await page.locator(".opblock").count()).toBeGreaterThan(20);
    expect(await page.textContent(".title")).toContain("connector-service");
    // Sections in a newcomer's order: connectors first, the service's housekeeping last.
    const sections = await page.locator(".opblock-tag").evaluateAll((tags) => tags.map((tag) => tag.getAttribute("data-tag")));
    expect(sections[0]).toBe("Connectors");
    expect(sections.at(-1)).toBe("Health");
    expect(elsewhere).toEqual([]);
    expect(refused).toEqual([]);
    await page.close();
  },
  30_000,
);

test.skipIf(!available)(
  '"Try it out" sends a body from the editor, with HTTP Basic from Authorize, and shows the answer',
  async () => {
    const page = await browser.newPage();
    const refused = watchPolicy(page);
    await page.goto(`${service.url}/docs`);
    await page.waitForSelector(".opblock");
    // Authorize with the administrator's Basic credentials.
    await page.click(".auth-wrapper .authorize");
    const basic = page.locator(".auth-container", { hasText: "basic" });
    await basic.locator("input[type=text]").fill(ADMIN.username);
    await basic.locator("input[type=password]").fill(ADMIN.password);
    await basic.locator("button.authorize").click();
    await page.click(".btn-done");
    // POST /api/v1/connectors: the body editor holds the document's example, the URL alone (never "string" in fields a
    // person did not mean to fill); send a real body from it.
    const create = page.locator(".opblock-post", { has: page.locator('.opblock-summary-path[data-path="/api/v1/connectors"]') });
    await create.locator(".opblock-summary").click();
    await create.locator("button.try-out__btn").click();
    const editor = create.locator("textarea.body-param__text");
    const example = (await (await fetch(`${service.url}/openapi.json`)).json()).paths["/api/v1/connectors"].post.requestBody
      .content["application/json"].example;
    expect(example).toEqual({ url: "https://mcp.example.com/mcp" });
    expect(JSON.parse(await editor.inputValue())).toEqual(example);
    await editor.fill(JSON.stringify({ url: "https://try-it-out.example/mcp" }));
    await create.locator("button.execute").click();
    const status = create.locator(".live-responses-table .response .response-col_status").first();
    await status.waitFor();
    expect((await status.textContent())?.trim()).toStartWith("201");
    const created = (await service.api("GET", "/api/v1/connectors?limit=100")).body.items.map((c: { url: string }) => c.url);
    expect(created).toContain("https://try-it-out.example/mcp");
    // The answer's body is shown, highlighted, under the same policy.
    expect(await create.locator(".live-responses-table .response-col_description pre").first().textContent()).toContain(
      "try-it-out.example",
    );
    expect(refused).toEqual([]);
    await page.close();
  },
  30_000,
);

test.skipIf(!available)(
  "another origin cannot frame /docs (its Authorize and Execute buttons act with the person's credentials)",
  async () => {
    const url = `${service.url}/docs`;
    expect(await framedUrl(browser, url)).not.toBe(url);
  },
  30_000,
);
