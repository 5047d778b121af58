import { expect } from "bun:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { mcpClient, toolText } from "./mcp";
import { waitFor } from "./wait";

export const MODERN = "2026-07-28";

type Handle = (request: Request) => Promise<Response>;

/** The MCP SDK v2 client pinned to 2026-07-28 (no initialize, no session), its requests handed to `handle`. */
export async function modernClient(url: string, handle: Handle) {
  const sent: Record<string, string>[] = [];
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      sent.push(Object.fromEntries(request.headers));
      return handle(request);
    },
  });
  const client = new Client({ name: "modern-test", version: "1.0.0" }, {
    versionNegotiation: { mode: { pin: MODERN } },
  } as never);
  await client.connect(transport);
  return { client, sent, close: () => client.close() };
}

/** A raw 2026-07-28 request: the envelope in `_meta` and the SEP-2243 headers, each overridable. */
export function modernRequest(
  url: string,
  body: { id?: unknown; method: string; params?: Record<string, unknown> },
  headers: Record<string, string | undefined> = {},
  version = MODERN,
  capabilities: Record<string, unknown> = {},
) {
  const name = (body.params?.name ?? body.params?.uri) as string | undefined;
  const all: Record<string, string | undefined> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": version,
    "mcp-method": body.method,
    ...(name !== undefined && { "mcp-name": name }),
    ...headers,
  };
  return new Request(url, {
    method: "POST",
    headers: Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined)),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: body.id ?? 1,
      method: body.method,
      params: {
        ...body.params,
        _meta: {
          ...(body.params?._meta as object),
          "io.modelcontextprotocol/protocolVersion": version,
          "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
          "io.modelcontextprotocol/clientCapabilities": capabilities,
        },
      },
    }),
  });
}

/**
 * The 2026-07-28 behaviours every gateway must show in front of server-everything (stdio): discover, list, call,
 * progress, colliding ids, both eras at once, and the header errors. `handle` is the gateway's fetch.
 */
export async function expectBothEras(url: string, handle: Handle) {
  const modern = await modernClient(url, handle);
  expect(modern.client.getServerVersion()?.name).toContain("everything");
  expect((await modern.client.listTools()).tools.map((t) => t.name)).toContain("echo");
  expect(toolText(await modern.client.callTool({ name: "echo", arguments: { message: "modern" } }))).toBe("Echo: modern");
  // It spoke 2026-07-28: routing headers on every request, never a session.
  expect(modern.sent.find((h) => h["mcp-method"] === "tools/call")).toMatchObject({
    "mcp-protocol-version": MODERN,
    "mcp-name": "echo",
  });
  expect(modern.sent.every((h) => h["mcp-session-id"] === undefined)).toBe(true);

  // Progress, colliding ids (each raw client sends id 1), and a legacy session at the same time.
  const legacy = await mcpClient(url, null, handle);
  const steps: number[] = [];
  const raw = (n: number) =>
    handle(modernRequest(url, { method: "tools/call", params: { name: "get-sum", arguments: { a: n, b: 1 } } })).then((r) =>
      r.json(),
    );
  const [long, a, b, c, old] = await Promise.all([
    modern.client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 0.4, steps: 2 } },
      {
        onprogress: (p) => void steps.push(p.progress),
      },
    ),
    raw(10),
    raw(20),
    raw(30),
    legacy.client.callTool({ name: "echo", arguments: { message: "legacy" } }),
  ]);
  expect(toolText(long)).toContain("Steps: 2");
  expect(steps).toEqual([1, 2]);
  for (const [answer, sum] of [
    [a, "11"],
    [b, "21"],
    [c, "31"],
  ] as const) {
    expect(answer.id).toBe(1);
    expect(answer.result).toMatchObject({ resultType: "complete" });
    expect(toolText(answer.result)).toContain(sum);
  }
  expect(toolText(old)).toBe("Echo: legacy");
  await legacy.close();
  await modern.close();
}

/**
 * A 2026-07-28 client starts a long call and goes away once progress comes (its request aborted: MCP 2026-07-28 cancels
 * by closing the response stream); resolves with what was sent to the server, read by `sentToServer`, as the call's id
 * on the pipe, once the server got notifications/cancelled for it.
 */
export async function cancelMidway(
  url: string,
  handle: Handle,
  sentToServer: () => { id?: unknown; method?: string; params?: unknown }[],
) {
  const modern = await modernClient(url, handle);
  const controller = new AbortController();
  let progressed = 0;
  const call = modern.client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 5, steps: 10 } },
    { signal: controller.signal, onprogress: () => void progressed++ },
  );
  call.catch(() => undefined);
  await waitFor("progress", () => progressed > 0);
  controller.abort();
  await expect(call).rejects.toThrow();
  const out = sentToServer().findLast((m) => m.method === "tools/call")!;
  await waitFor("notifications/cancelled", () =>
    sentToServer().some(
      (m) => m.method === "notifications/cancelled" && (m.params as { requestId?: unknown }).requestId === out.id,
    ),
  );
  await modern.close();
}
