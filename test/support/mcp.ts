import { expect } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startEverything, type Peer } from "../peers/everything";
import { authHeader, type Api, type Credentials } from "./api";
import { ADMIN, startTestService, type TestService } from "./service";

export const proxyUrl = (service: TestService, id: string) => `${service.url}/api/v1/connectors/${id}/mcp`;

/**
 * An MCP SDK client pointed at `url`, authenticating to the service as `as`. With `handle` (an app's), its
 * requests go to that function instead of a socket: the whole exchange stays in the test's process.
 */
export async function mcpClient(url: string, as: Credentials | null = ADMIN, handle?: (request: Request) => Promise<Response>) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: as ? { headers: { authorization: authHeader(as) } } : {},
    ...(handle && { fetch: (input: string | URL | Request, init?: RequestInit) => handle(new Request(input, init)) }),
  });
  const client = new Client({ name: "connector-service-tests", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, close: () => client.close() };
}

/** Creates a connector for `url` and connects it (headers optional); fails the test if that fails. */
export async function connectedConnector(api: Api, url: string, headers?: Record<string, string>): Promise<string> {
  const created = await api("POST", "/api/v1/connectors", { body: { url } });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${created.text}`);
  const connected = await api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: headers ? { headers } : {} });
  if (connected.status !== 200 || connected.body.state !== "connected")
    throw new Error(`connect: ${connected.status} ${connected.text}`);
  return created.body.id;
}

/** A client's POST of one MCP message to `url`, with `authorization` (a whole header value) when given. */
export const mcpRequest = (
  url: string,
  authorization: string | undefined,
  body: BodyInit,
  headers: Record<string, string> = {},
) =>
  new Request(url, {
    method: "POST",
    headers: {
      ...(authorization !== undefined && { authorization }),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body,
  });

/** A client's POST of one MCP message to `url` with a Bearer token (and any other headers: a session's, say). */
export const mcpPost = (url: string, token: string, body: BodyInit, headers: Record<string, string> = {}) =>
  mcpRequest(url, `Bearer ${token}`, body, headers);

/** A tools/list in the 2025 session `session` at `url`, with `authorization` when given. */
export const listingInSession = (url: string, session: string, authorization?: string, id = 1) =>
  mcpRequest(url, authorization, JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list" }), {
    "mcp-session-id": session,
    "mcp-protocol-version": "2025-11-25",
  });

/** The text of a tool result's first content block. */
export const toolText = (result: unknown) => (result as { content: { text: string }[] }).content[0]!.text;

/** server-everything (streamableHttp) behind a test service, with a connected connector to it. */
export async function startProxiedEverything(env: Record<string, string> = {}) {
  const upstream: Peer = await startEverything();
  const service = await startTestService(env);
  const id = await connectedConnector(service.api, upstream.url);
  return {
    upstream,
    service,
    id,
    async stop() {
      await service.stop();
      await upstream.stop();
    },
  };
}

/**
 * Two sessions of server-everything at `url` calling tools at once. Their SDK clients use the same request ids
 * (0, 1, …) and progress tokens, so a gateway that mixed sessions up would deliver answers or progress to the
 * wrong one: each must get only its own.
 */
export async function expectIsolatedSessions(url: string, headers: Record<string, string> = {}): Promise<void> {
  const withHeaders = (request: Request) => {
    const all = new Headers(request.headers);
    for (const [name, value] of Object.entries(headers)) all.set(name, value);
    return fetch(new Request(request, { headers: all }));
  };
  const [a, b] = await Promise.all([mcpClient(url, null, withHeaders), mcpClient(url, null, withHeaders)]);
  const progress = { a: 0, b: 0 };
  const [ra, rb, sa, sb] = await Promise.all([
    a.client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 0.6, steps: 3 } }, undefined, {
      onprogress: () => void progress.a++,
    }),
    b.client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 0.4, steps: 2 } }, undefined, {
      onprogress: () => void progress.b++,
    }),
    a.client.callTool({ name: "get-sum", arguments: { a: 1, b: 1 } }),
    b.client.callTool({ name: "get-sum", arguments: { a: 500, b: 500 } }),
  ]);
  expect(toolText(ra)).toContain("Steps: 3");
  expect(toolText(rb)).toContain("Steps: 2");
  expect(toolText(sa)).toContain("2");
  expect(toolText(sb)).toContain("1000");
  expect(progress).toEqual({ a: 3, b: 2 });
  await a.close();
  await b.close();
}
