import { afterAll, beforeAll, expect, test } from "bun:test";
import { EVERYTHING } from "../peers/everything";
import { authHeader } from "../support/api";
import { proxyUrl, toolText } from "../support/mcp";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { expectBothEras, MODERN, modernRequest } from "../support/modern";
import { ADMIN, startTestService, type TestService } from "../support/service";

// End to end: a managed mcp+stdio:// connector (local runtime) reached through the service's proxy URL by the v2 client
// pinned to 2026-07-28 and by the v1 client, over real sockets.
const PRESETS = JSON.stringify([
  {
    url: "mcp+stdio://everything",
    metadata: { name: "Everything" },
    stdio: { image: "example/server-everything:latest", command: ["node", EVERYTHING], args: ["stdio"] },
  },
]);
let service: TestService;
let url: string;
beforeAll(async () => {
  // SQLite on either store run: the local driver's processes are one replica's, refused on PostgreSQL by design.
  service = await startTestService({ CONNECTOR__PRESETS: PRESETS, DATABASE__PATH: ":memory:" });
  const created = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://everything" } });
  expect(created.status).toBe(201);
  const connected = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {} });
  expect(connected.body).toMatchObject({ state: "connected" });
  url = proxyUrl(service, created.body.id);
});
afterAll(async () => {
  await service.stop();
});

const asAdmin = (request: Request) => {
  const headers = new Headers(request.headers);
  headers.set("authorization", authHeader(ADMIN));
  return fetch(new Request(request, { headers }));
};

test("a managed stdio server serves 2026-07-28 and 2025 clients through the proxy", async () => {
  await expectBothEras(url, asAdmin);
});

test("through the proxy too: server/discover, and the gateway's -32020 and -32022", async () => {
  const discover = await asAdmin(modernRequest(url, { method: "server/discover" }));
  expect((await discover.json()).result).toMatchObject({ supportedVersions: ["2026-07-28"], resultType: "complete" });
  const call = { method: "tools/call", params: { name: "echo", arguments: { message: "x" } } };
  const mismatch = await asAdmin(modernRequest(url, call, { "mcp-protocol-version": "2025-11-25" }));
  expect(mismatch.status).toBe(400);
  expect((await mismatch.json()).error.code).toBe(-32020);
  // Mcp-Name is checked by the proxy before the gateway; with the 2026-07-28 code as well.
  const named = await asAdmin(modernRequest(url, call, { "mcp-name": "get-sum" }));
  expect(named.status).toBe(400);
  expect((await named.json()).error.code).toBe(-32020);
  const unknown = await asAdmin(modernRequest(url, call, {}, "2031-01-01"));
  expect(unknown.status).toBe(400);
  expect((await unknown.json()).error).toMatchObject({ code: -32022, data: { supported: ["2026-07-28"] } });
  const ok = await asAdmin(modernRequest(url, call));
  expect(toolText((await ok.json()).result)).toBe("Echo: x");
});

test("a 2026-07-28 client is asked through a parked call when the server elicits during its call", async () => {
  const client = new ModernClient({ name: "parked-managed", version: "1.0.0" }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: MODERN } },
  } as never);
  const asked: string[] = [];
  client.setRequestHandler("elicitation/create", async (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: { color: "blue" } };
  });
  await client.connect(new ModernTransport(new URL(url), { fetch: (input, init) => asAdmin(new Request(input, init)) }));
  const result = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
  expect(asked).toHaveLength(1);
  expect(JSON.stringify(result)).toContain("blue");
  await client.close();
});

test("a parked call is its caller's: the same user by another credential finds nothing, the caller's retry completes it", async () => {
  const capabilities = { elicitation: { form: {} } };
  const call = { method: "tools/call", params: { name: "trigger-elicitation-request", arguments: {} } };
  const first = await (await asAdmin(modernRequest(url, call, {}, MODERN, capabilities))).json();
  expect(first.result).toMatchObject({ resultType: "input_required" });
  const [key] = Object.keys(first.result.inputRequests);
  const retry = modernRequest(
    url,
    {
      id: 2,
      ...call,
      params: {
        ...call.params,
        requestState: first.result.requestState,
        inputResponses: { [key!]: { action: "accept", content: { color: "red" } } },
      },
    },
    {},
    MODERN,
    capabilities,
  );
  const token = (await service.api("POST", "/api/v1/tokens", { body: { name: "parked" } })).body.token as string;
  const byToken = new Request(retry.clone(), {
    headers: { ...Object.fromEntries(retry.headers), authorization: `Bearer ${token}` },
  });
  expect((await (await fetch(byToken)).json()).error).toMatchObject({ code: -32602 });
  const done = await (await asAdmin(retry)).json();
  expect(done.result).toMatchObject({ resultType: "complete" });
  expect(JSON.stringify(done.result.content)).toContain("red");
});
