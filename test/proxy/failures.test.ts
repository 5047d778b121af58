import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startBearerServer } from "../peers/bearer-server";
import { startScriptedServer, type ScriptedServer } from "../peers/scripted-server";
import { connectedConnector, proxyUrl } from "../support/mcp";
import { apiClient, authHeader, ADMIN, createUser, expectProblem, startTestService, type TestService } from "../support/service";

let scripted: ScriptedServer;
let service: TestService;
let id: string;

beforeAll(async () => {
  scripted = startScriptedServer();
  service = await startTestService({ PROXY__UPSTREAM_TIMEOUT_SECONDS: "1", PROXY__MAX_BODY_BYTES: "4096" });
  id = await connectedConnector(service.api, scripted.url);
});
afterAll(async () => {
  await service.stop();
  await scripted.stop();
});

const mcpPost = (connectorId: string, signal?: AbortSignal) =>
  fetch(proxyUrl(service, connectorId), {
    method: "POST",
    signal,
    headers: { authorization: authHeader(ADMIN), "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
  });

const metric = async (name: string) => {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
};

describe("streams", () => {
  test("a client that goes away mid-stream frees the upstream stream at once", async () => {
    scripted.mode = "stream";
    const before = { ...scripted.streams };
    const controller = new AbortController();
    const res = await mcpPost(id, controller.signal);
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain("tick");
    expect(await metric("mcp_proxy_open_streams")).toBe(1);
    controller.abort();
    const until = Date.now() + 3000;
    while (scripted.streams.cancelled === before.cancelled && Date.now() < until) await Bun.sleep(20);
    expect(scripted.streams.opened).toBe(before.opened + 1);
    expect(scripted.streams.cancelled).toBe(before.cancelled + 1);
    while ((await metric("mcp_proxy_open_streams")) !== 0 && Date.now() < until) await Bun.sleep(20);
    expect(await metric("mcp_proxy_open_streams")).toBe(0);
    scripted.mode = "mcp";
  });
});

describe("upstream failures", () => {
  test("no response headers within PROXY__UPSTREAM_TIMEOUT_SECONDS: 504, the connector stays connected", async () => {
    scripted.mode = "hang";
    const started = performance.now();
    const res = await mcpPost(id);
    expect(res.status).toBe(504);
    expect(res.headers.get("content-type")).toStartWith("application/problem+json");
    expect(performance.now() - started).toBeLessThan(3000);
    scripted.mode = "mcp";
    expect((await service.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
  });

  test("upstream down: 502 problem, the connector stays connected", async () => {
    const down = startBearerServer("k");
    const downId = await connectedConnector(service.api, down.url, { Authorization: "Bearer k" });
    await down.stop();
    const res = await mcpPost(downId);
    expect(res.status).toBe(502);
    const problem = await res.json();
    expect(problem.detail).toContain("could not be reached");
    expect((await service.api("GET", `/api/v1/connectors/${downId}`)).body.state).toBe("connected");
  });
});

describe("request size", () => {
  const send = (body: BodyInit) =>
    fetch(proxyUrl(service, id), {
      method: "POST",
      headers: { authorization: authHeader(ADMIN), "content-type": "application/json", accept: "application/json, text/event-stream" },
      body,
      duplex: "half",
    } as RequestInit);
  const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x", arguments: { blob: "y".repeat(10_000) } } });

  test("a body over PROXY__MAX_BODY_BYTES is a 413 problem, declared length or not", async () => {
    const declared = await send(big);
    expect(declared.status).toBe(413);
    expect(declared.headers.get("content-type")).toStartWith("application/problem+json");
    const streamed = await send(
      new ReadableStream({
        start(controller) {
          for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode(big.slice(i * 1000, (i + 1) * 1000)));
          controller.enqueue(new TextEncoder().encode(big.slice(10_000)));
          controller.close();
        },
      }),
    );
    expect(streamed.status).toBe(413);
    expect((await streamed.json()).detail).toContain("PROXY__MAX_BODY_BYTES");
  });
});

describe("who may use the proxy", () => {
  test("another user gets 404; no credentials 401; a disconnected connector 409", async () => {
    const mallory = await createUser(service.api, "mallory");
    const res = await apiClient(service.url, mallory)("POST", `/api/v1/connectors/${id}/mcp`, { body: {} });
    expectProblem(res, 404);
    const anon = await fetch(proxyUrl(service, id), { method: "POST", body: "{}" });
    expect(anon.status).toBe(401);
    expect(anon.headers.get("www-authenticate")).toContain("Basic");

    const other = await connectedConnector(service.api, scripted.url);
    await service.api("POST", `/api/v1/connectors/${other}/disconnect`);
    const off = await service.api("POST", `/api/v1/connectors/${other}/mcp`, { body: {} });
    expectProblem(off, 409);
    expect(off.body.detail).toContain("disconnected");
    const created = (await service.api("POST", "/api/v1/connectors", { body: { url: scripted.url } })).body.id;
    expectProblem(await service.api("GET", `/api/v1/connectors/${created}/mcp`), 409);
  });

  test("methods other than POST, GET and DELETE are not routes", async () => {
    const res = await service.api("PUT", `/api/v1/connectors/${id}/mcp`, { body: {} });
    expect(res.status).toBe(404);
  });
});

test("metrics count proxied requests by status, upstream latency and connectors by state", async () => {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  expect(text).toContain('mcp_proxy_requests_total{status="504"} 1');
  expect(text).toContain('mcp_proxy_requests_total{status="502"} 1');
  expect(text).toMatch(/mcp_proxy_requests_total\{status="200"\} \d+/);
  expect(text).toMatch(/mcp_proxy_upstream_latency_seconds_bucket\{le="\+Inf"\} \d+/);
  expect(text).toMatch(/connectors\{state="connected"\} \d+/);
  expect(text).toMatch(/connectors\{state="disconnected"\} 1/);
});
