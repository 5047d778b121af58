import { expect, test } from "bun:test";
import { ConfigError, describeConfig, loadConfig } from "../../src/config/load";
import { createTestApp, type TestApp } from "../support/app";
import { readResponse, expectProblem } from "../support/api";
import { scrape } from "./scrape";

// METRICS__TOKEN: when set, /metrics wants it as a bearer token; unset, /metrics is open.
const TOKEN = "metrics-token-0123456789-abcdef";

const get = async (t: TestApp, headers: Record<string, string> = {}) =>
  readResponse(await t.handle(new Request(`${t.publicUrl}/metrics`, { headers })));

test("without METRICS__TOKEN /metrics is open, as before", async () => {
  const t = await createTestApp();
  try {
    const res = await get(t);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
    // Whatever credentials come along are not looked at.
    expect((await get(t, { authorization: "Bearer anything-at-all" })).status).toBe(200);
  } finally {
    await t.close();
  }
});

test("with METRICS__TOKEN: 401 problem with a Bearer challenge without it or with another token; 200 with it", async () => {
  const t = await createTestApp({ env: { METRICS__TOKEN: TOKEN } });
  try {
    // Reads nothing before the token is checked: a probe metric shows when the registry was rendered.
    let rendered = 0;
    t.services.metrics.gauge("probe", "Renders seen", "n", async () => {
      rendered++;
      return [];
    });

    const refused = [
      await get(t),
      await get(t, { authorization: "Bearer wrong-token-0123456789-abcdef" }),
      await get(t, { authorization: `Bearer ${TOKEN}x` }),
      await get(t, { authorization: `Bearer ${TOKEN.slice(0, -1)}` }),
      await get(t, { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString("base64")}` }),
      await get(t, { authorization: TOKEN }),
      // The API's own credentials are not the metrics token.
      await get(t, { authorization: `Bearer ${t.admin.token}` }),
    ];
    for (const res of refused) {
      expectProblem(res, 401);
      expect(res.headers.get("www-authenticate")).toStartWith('Bearer realm="metrics"');
      expect(res.text).not.toContain("mcp_proxy");
    }
    expect(refused[0]!.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
    expect(refused[1]!.headers.get("www-authenticate")).toBe('Bearer realm="metrics", error="invalid_token"');
    expect(rendered).toBe(0);

    const ok = await scrape(t, { authorization: `Bearer ${TOKEN}` });
    expect(ok.response.status).toBe(200);
    expect(ok.text).toContain("# TYPE mcp_proxy_responses_total counter");
    expect(rendered).toBe(1);
    // The scheme is case-insensitive (RFC 9110 §11.1).
    expect((await get(t, { authorization: `bearer ${TOKEN}` })).status).toBe(200);

    expect(t.logs.join("\n")).not.toContain(TOKEN);
    expect(t.logs.join("\n")).not.toContain(TOKEN.slice(0, -1));
  } finally {
    await t.close();
  }
});

test("METRICS__TOKEN is masked in the logged settings and never echoed by a start-up error", () => {
  expect(describeConfig({ METRICS__TOKEN: TOKEN, SERVER__PORT: "9000" }, loadConfig({ METRICS__TOKEN: TOKEN }))).toEqual({
    SERVER__PORT: "9000",
    METRICS__TOKEN: "********",
  });
  expect(loadConfig({ METRICS__TOKEN: TOKEN }).metrics.token).toBe(TOKEN);
  expect(loadConfig({}).metrics.token).toBeUndefined();
  for (const bad of ["short-secret", `${"a".repeat(20)} with a space`, "x".repeat(1025)]) {
    let error: unknown;
    try {
      loadConfig({ METRICS__TOKEN: bad });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toStartWith("METRICS__TOKEN: must be 16 to 1024 visible ASCII characters");
    expect((error as ConfigError).message).not.toContain(bad.slice(0, 10));
  }
});

test("OpenAPI documents the 401 of /metrics as a problem and says how to send the token", async () => {
  const t = await createTestApp();
  try {
    const doc = await (await t.handle(new Request(`${t.publicUrl}/openapi.json`))).json();
    const operation = doc.paths["/metrics"].get;
    expect(Object.keys(operation.responses).sort()).toEqual(["200", "401"]);
    expect(Object.keys(operation.responses["401"].content)).toEqual(["application/problem+json"]);
    expect(operation.description).toContain("METRICS__TOKEN");
    expect(operation.description).toContain('Bearer realm="metrics"');
  } finally {
    await t.close();
  }
});
