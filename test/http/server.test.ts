import { afterAll, beforeAll, expect, test } from "bun:test";
import { startBearerServer, type BearerServer } from "../peers/bearer-server";
import { connectedConnector } from "../support/mcp";
import { startTestService, type TestService } from "../support/service";
import { expectProblem } from "../support/api";

// The real server (Bun.serve, its native proxy route, the request log) over a socket.
let service: TestService;
let upstream: BearerServer;
beforeAll(async () => {
  upstream = startBearerServer("k");
  service = await startTestService({ PROXY__MAX_BODY_BYTES: "4096" });
});
afterAll(async () => {
  await service.stop();
  await upstream.stop();
});

test("API bodies have their own limit: a 5 kB connector is created although the proxy's limit is 4 kB", async () => {
  const res = await service.api("POST", "/api/v1/connectors", {
    body: { url: "https://big.example/mcp", metadata: { notes: "n".repeat(5_000) } },
  });
  expect(res.status).toBe(201);
});

test("the proxy's limit applies to the proxy, and its 413 names PROXY__MAX_BODY_BYTES", async () => {
  const id = await connectedConnector(service.api, upstream.url, { Authorization: "Bearer k" });
  const res = await service.api("POST", `/api/v1/connectors/${id}/mcp`, { raw: JSON.stringify({ blob: "y".repeat(5_000) }) });
  expectProblem(res, 413);
  expect(res.body.detail).toBe("The request body is larger than 4096 bytes (PROXY__MAX_BODY_BYTES)");
  // Refused on its declared length: nothing of it went upstream.
  expect(upstream.seen.filter((headers) => Number(headers["content-length"]) > 4096)).toEqual([]);
});

test("every answer carries its request id (the client's when it is sane), also in a problem's instance and the log line", async () => {
  const mine = await service.api("GET", "/api/v1/connectors/nope", { headers: { "x-request-id": "trace-42" } });
  expectProblem(mine, 404);
  expect(mine.headers.get("x-request-id")).toBe("trace-42");
  expect(mine.body.instance).toBe("urn:request:trace-42");
  const insane = await service.api("GET", "/healthz", { headers: { "x-request-id": "no spaces allowed" } });
  expect(insane.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  const line = service.logs.map((l) => JSON.parse(l)).find((l) => l.request_id === "trace-42");
  expect(line).toMatchObject({ msg: "request", method: "GET", path: "/api/v1/connectors/nope", status: 404 });
});

test("the native proxy route answers problems like the rest of the API, with the request id", async () => {
  const res = await service.api("POST", "/api/v1/connectors/00000000-0000-4000-8000-000000000000/mcp", {
    body: {},
    headers: { "x-request-id": "proxy-7" },
  });
  expectProblem(res, 404);
  expect(res.body.instance).toBe("urn:request:proxy-7");
  const anon = await service.api("POST", "/api/v1/connectors/x/mcp", { as: null, body: {} });
  expectProblem(anon, 401);
  expect(anon.headers.get("www-authenticate")).toContain("Basic");
});

test("the request log has the path without its query (which can carry OAuth codes)", async () => {
  await fetch(`${service.url}/api/v1/connectors/oauth/callback?code=secret-code&state=s`, {
    headers: { "x-request-id": "cb-1" },
  });
  const line = service.logs.map((l) => JSON.parse(l)).find((l) => l.request_id === "cb-1");
  expect(line.path).toBe("/api/v1/connectors/oauth/callback");
  expect(service.logs.join("\n")).not.toContain("secret-code");
});
