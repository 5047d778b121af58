import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { pagedToolsServer } from "../peers/paged-tools";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient } from "../support/mcp";
import { waitFor } from "../support/wait";

// OpenTelemetry over real sockets: the service exports with the SDK's OTLP/HTTP exporter to a receiver in the test,
// which reads the JSON the exporter sends. A client's traceparent is continued; the proxy's span has the upstream call
// as its child; the upstream gets that child's traceparent. The service reaches the receiver and the upstream over
// real sockets; the client reaches the service through `app.handle`.
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
};

const spans: OtlpSpan[] = [];
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = (await request.json()) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
    for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
    return Response.json({});
  },
});
const tools = pagedToolsServer(["lookup"], 10);
const seenTraceparents: (string | null)[] = [];
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(request) {
    seenTraceparents.push(request.headers.get("traceparent"));
    return tools.handler(request);
  },
});
let service: TestApp;

beforeAll(async () => {
  service = await createTestApp({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}`,
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_SERVICE_NAME: "cs-under-test",
    },
    realNetwork: true,
  });
});
afterAll(async () => {
  await service.services.tracing?.shutdown();
  await service.close();
  receiver.stop(true);
  upstream.stop(true);
});

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value && (value.stringValue ?? value.intValue ?? value.boolValue);
};

describe("traces", () => {
  test("a proxied call: the client's trace continues, the upstream call is its child, and the upstream gets its traceparent", async () => {
    const id = await connectedConnector(service.api, `http://127.0.0.1:${upstream.port}/mcp`);
    await waitFor(
      "the connect span",
      () => spans.some((s) => s.name === "connector.connect" && attribute(s, "mcp.connector.id") === id),
      5_000,
    );

    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parentId = "00f067aa0ba902b7";
    const before = seenTraceparents.length;
    const res = await service.fetch(`${service.publicUrl}/api/v1/connectors/${id}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${service.admin.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        traceparent: `00-${traceId}-${parentId}-01`,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "lookup", arguments: {} } }),
    });
    expect(res.status).toBe(200);
    await res.text();

    const server = await waitFor(
      "the proxy's span",
      () => spans.find((s) => s.name === "mcp.proxy" && s.traceId.toLowerCase() === traceId),
      5_000,
    );
    expect(server.parentSpanId?.toLowerCase()).toBe(parentId);
    expect(attribute(server, "mcp.method.name")).toBe("tools/call");
    expect(attribute(server, "mcp.tool.name")).toBe("lookup");
    expect(String(attribute(server, "http.response.status_code"))).toBe("200");
    const client = await waitFor(
      "the upstream call's span",
      () => spans.find((s) => s.name === "mcp.upstream" && s.traceId.toLowerCase() === traceId),
      5_000,
    );
    expect(client.parentSpanId).toBe(server.spanId);
    const sent = seenTraceparents.slice(before).find((h) => h?.includes(traceId));
    expect(sent).toBe(`00-${traceId}-${client.spanId.toLowerCase()}-01`);
  });
});

test("a virtual server's member call gets the proxy's span, naming the virtual server, under the virtual server's span", async () => {
  const id = await connectedConnector(service.api, `http://127.0.0.1:${upstream.port}/mcp`);
  const created = await service.api("POST", "/api/v1/virtual-servers", {
    body: { name: "Traced", members: [{ connector_id: id, prefix: "t" }] },
  });
  expect(created.status).toBe(201);
  const { client } = await mcpClient(created.body.mcp_url, { token: service.admin.token }, service.fetch);
  await client.callTool({ name: "t__lookup", arguments: {} });
  await client.close();
  const call = await waitFor(
    "the member call's span",
    () =>
      spans.find(
        (s) =>
          s.name === "mcp.proxy" && attribute(s, "mcp.connector.id") === id && attribute(s, "mcp.method.name") === "tools/call",
      ),
    5_000,
  );
  expect(attribute(call, "mcp.virtual_server.id")).toBe(created.body.id);
  expect(attribute(call, "mcp.tool.name")).toBe("lookup");
  // It is a child of the virtual server's own span for the client's request, in the same trace.
  const parent = await waitFor("the virtual server's span", () => spans.find((s) => s.spanId === call.parentSpanId), 5_000);
  expect(parent.name).toBe("mcp.virtual_server");
  expect(parent.traceId).toBe(call.traceId);
  expect(attribute(parent, "mcp.virtual_server.id")).toBe(created.body.id);
});

test("a connect made by PATCH (new headers) and a token refresh get a span each", async () => {
  const id = await connectedConnector(service.api, `http://127.0.0.1:${upstream.port}/mcp`, { "x-api-key": "first" });
  const connects = () => spans.filter((s) => s.name === "connector.connect" && attribute(s, "mcp.connector.id") === id);
  await waitFor("the connect span", () => connects().length === 1, 5_000);
  const patched = await service.api("PATCH", `/api/v1/connectors/${id}`, { body: { headers: { "x-api-key": "second" } } });
  expect(patched.status).toBe(200);
  await waitFor("the PATCH's connect span", () => connects().length === 2, 5_000);

  await service.services.authorization.refresh(id);
  await waitFor(
    "the refresh span",
    () => spans.some((s) => s.name === "connector.oauth.refresh" && attribute(s, "mcp.connector.id") === id),
    5_000,
  );
});

test("without OTEL_EXPORTER_OTLP_ENDPOINT there is no tracer at all, and nothing is sent upstream", async () => {
  const t = await createTestApp();
  try {
    expect(t.services.tracing).toBeUndefined();
    let traceparent: string | null = "unset";
    t.network.serve("https://plain.example", (request) => {
      traceparent = request.headers.get("traceparent");
      return tools.handler(request);
    });
    const id = await connectedConnector(t.api, "https://plain.example/mcp");
    traceparent = "unset";
    const res = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${t.admin.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      }),
    );
    expect(res.status).toBe(200);
    expect(traceparent).toBeNull();
  } finally {
    await t.close();
  }
});
