import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { startTestService, type TestService } from "../support/service";

// Debian's Chromium (installed by .ci/run when missing); without it this test is skipped, and says so.
const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`SKIPPED: the Swagger UI browser test needs ${CHROMIUM} (Debian package "chromium")`);

let service: TestService;
let browser: Browser;
beforeAll(async () => {
  if (!available) return;
  service = await startTestService();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
});
afterAll(async () => {
  if (!available) return;
  await browser.close();
  await service.stop();
});

test.skipIf(!available)("Swagger UI renders every operation in a real browser without asking any other host for anything", async () => {
  const page = await browser.newPage();
  const elsewhere: string[] = [];
  page.on("request", (r) => {
    if (!r.url().startsWith(service.url) && !r.url().startsWith("data:")) elsewhere.push(r.url());
  });
  await page.goto(`${service.url}/docs`);
  await page.waitForSelector(".opblock");
  expect(await page.locator(".opblock").count()).toBeGreaterThan(20);
  expect(await page.textContent(".title")).toContain("connector-service");
  expect(elsewhere).toEqual([]);
  await page.close();
}, 30_000);
