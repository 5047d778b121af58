import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Browser } from "playwright-core";
import { launchChromium } from "../support/chromium";
import { bearerMcp } from "../peers/bearer-server";
import { connectedConnector } from "../support/mcp";
import { ADMIN, startTestService, type TestService } from "../support/service";

// The attack of a page of another site in a real browser that holds the administrator's Basic credential and sends
// it by itself (Playwright's httpCredentials with send: "always" stands for a credential the browser cached): its
// forms change nothing (src/http/cross-site.ts). And a 401 to a page the person opens asks for no Basic credential.
let service: TestService;
let upstream: ReturnType<typeof Bun.serve>;
let browser: Browser;

beforeAll(async () => {
  const mcp = bearerMcp("k");
  upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: mcp.handler });
  service = await startTestService();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser.close();
  await service.stop();
  upstream.stop(true);
});

/** A page of another site (`localhost` is another site than `127.0.0.1`) that posts a form to `target` at once. */
function attackerPage(target: string, fields: Record<string, string>, enctype = "application/x-www-form-urlencoded") {
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
    .join("");
  const html = `<!doctype html><title>Win a prize</title><form id="f" method="post" enctype="${enctype}" action="${target}">${inputs}</form><script>document.getElementById("f").submit()</script>`;
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }),
  });
}

test("a page of another site posts forms with the browser's Basic credential: disconnect and connect are refused, the connector stays connected", async () => {
  const id = await connectedConnector(service.api, `http://127.0.0.1:${upstream.port}/mcp`, { Authorization: "Bearer k" });
  const context = await browser.newContext({ httpCredentials: { ...ADMIN, origin: service.url, send: "always" } });
  for (const [path, enctype] of [
    [`/api/v1/connectors/${id}/disconnect`, "application/x-www-form-urlencoded"],
    [`/api/v1/connectors/${id}/connect`, "text/plain"],
    [`/api/v1/connectors/${id}/tools/approve`, "multipart/form-data"],
  ] as const) {
    // No fields: an empty body, which the API took for no body at all.
    const attacker = attackerPage(`${service.url}${path}`, {}, enctype);
    const page = await context.newPage();
    const answered = page.waitForResponse((r) => r.url().startsWith(service.url) && r.request().method() === "POST");
    await page.goto(`http://localhost:${attacker.port}/`);
    const response = await answered;
    expect({ path, status: response.status() }).toEqual({ path, status: 403 });
    await page.close();
    attacker.stop(true);
  }
  expect((await service.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
  await context.close();
}, 60_000);

test("a page of the service's own origin still makes changes with a credential it holds, no body type needed (Swagger UI's way)", async () => {
  const id = await connectedConnector(service.api, `http://127.0.0.1:${upstream.port}/mcp`, { Authorization: "Bearer k" });
  const context = await browser.newContext();
  const page = await context.newPage();
  // A page of the service's own origin (its health answer: light to load), making a change as Swagger UI's Try it out does.
  await page.goto(`${service.url}/healthz`);
  // As Swagger UI's Try it out sends it: the credential it was given, no body, no content type.
  const authorization = `Basic ${btoa(`${ADMIN.username}:${ADMIN.password}`)}`;
  const status = await page.evaluate(
    async ([path, authorization]) => (await fetch(path!, { method: "POST", headers: { authorization: authorization! } })).status,
    [`/api/v1/connectors/${id}/disconnect`, authorization],
  );
  expect(status).toBe(200);
  await context.close();
}, 60_000);

test("opening an API URL in the browser without credentials: a 401 that asks for no Basic credential (nothing to cache)", async () => {
  const page = await browser.newPage();
  const response = await page.goto(`${service.url}/api/v1/connectors`);
  expect(response!.status()).toBe(401);
  expect(response!.headers()["www-authenticate"]).toBe('Bearer realm="connector-service"');
  await page.close();
}, 60_000);
