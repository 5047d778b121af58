import type { ToolView as PolicyView } from "../connectors/tool-policy";
import { eventData } from "./event-data";
import { toolDigest, type Pinning } from "./tool-pins";

/** A connector's policy on the wire, with its pins when the policy pins tool definitions. */
export type ToolView = PolicyView & { pinning?: Pinning };

/**
 * A connector's tool policy on the wire (README "Tool policy"): the one place the proxy reads JSON-RPC. Requests:
 * a call of a hidden tool is answered here ([MCP 2025-11-25 tools §Error handling](https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling):
 * -32602 for an unknown tool), a renamed one goes on under the server's name. Responses to `tools/list`, JSON or
 * an event stream, are filtered and rewritten; everything else passes as it came. Connectors without a policy never
 * come here: their bodies stream unread.
 */

type Message = { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown; result?: unknown };

export type FilteredRequest =
  | { kind: "answer"; response: Response }
  | { kind: "forward"; body: Uint8Array; mcpName?: string; listIds: Set<string> };

const rpcError = (id: unknown, code: number, message: string, status = 200) =>
  new Response(JSON.stringify({ jsonrpc: "2.0", id: id ?? null, error: { code, message } }), { status, headers: { "content-type": "application/json" } });

/** JSON-RPC ids as keys: 1 and "1" are different ids. */
const idKey = (id: unknown) => JSON.stringify(id);

export function filterRequest(bytes: Uint8Array, headers: Headers, view: ToolView): FilteredRequest {
  const unchanged: FilteredRequest = { kind: "forward", body: bytes, listIds: new Set() };
  let message: unknown;
  try {
    message = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return unchanged; // the server says what is wrong with it
  }
  if (Array.isArray(message)) {
    return { kind: "answer", response: rpcError(null, -32600, "Batches are not accepted by a connector with a tool policy (MCP 2025-06-18 removed JSON-RPC batching)", 400) };
  }
  if (typeof message !== "object" || message === null) return unchanged;
  const m = message as Message;
  // MCP 2026-07-28: the routing headers must say what the body says, or a gateway and the server would disagree.
  const methodHeader = headers.get("mcp-method");
  if (methodHeader !== null && methodHeader !== m.method) return { kind: "answer", response: rpcError(m.id, -32600, `Mcp-Method says ${methodHeader}, the body ${String(m.method)}`, 400) };
  if (m.method === "tools/list" && m.id !== undefined) return { ...unchanged, listIds: new Set([idKey(m.id)]) };
  if (m.method !== "tools/call" || typeof m.params !== "object" || m.params === null) return unchanged;
  const params = m.params as { name?: unknown };
  if (typeof params.name !== "string") return unchanged;
  const nameHeader = headers.get("mcp-name");
  if (nameHeader !== null && nameHeader !== params.name) return { kind: "answer", response: rpcError(m.id, -32600, `Mcp-Name says ${nameHeader}, the body ${params.name}`, 400) };
  const original = view.original(params.name);
  if (original === undefined) return { kind: "answer", response: rpcError(m.id, -32602, `Unknown tool: ${params.name}`) };
  if (view.pinning?.hiddenByName(original)) {
    return { kind: "answer", response: rpcError(m.id, -32602, `Unknown tool: ${params.name} (its definition changed since it was approved: an approval is needed)`) };
  }
  if (original === params.name) return unchanged;
  const body = new TextEncoder().encode(JSON.stringify({ ...m, params: { ...params, name: original } }));
  return { kind: "forward", body, ...(nameHeader !== null && { mcpName: original }), listIds: new Set() };
}

/** A tools/list result as clients may see it: hidden tools gone, names and descriptions as the policy says. */
export function rewriteToolList(result: unknown, view: ToolView): unknown {
  if (typeof result !== "object" || result === null || !Array.isArray((result as { tools?: unknown }).tools)) return result;
  const tools = (result as { tools: unknown[] }).tools.filter((tool): tool is { name: string } => typeof (tool as { name?: unknown })?.name === "string");
  let hiddenByPins = (_: { name: string }) => false;
  if (view.pinning) {
    const pinning = view.pinning;
    const digests = new Map(tools.map((tool) => [tool, toolDigest(tool)]));
    pinning.observe(tools.map((tool) => ({ name: tool.name, digest: digests.get(tool)! })), (result as { nextCursor?: unknown }).nextCursor === undefined);
    hiddenByPins = (tool) => pinning.hidden(tool.name, digests.get(tool)!);
  }
  const shown = tools.filter((tool) => view.visible(tool.name) && !hiddenByPins(tool));
  // A tool renamed to another's own name takes it: the other would not be callable, so it is not listed either.
  const takenByRename = new Set(shown.filter((tool) => view.exposed(tool.name) !== tool.name).map((tool) => view.exposed(tool.name)));
  return {
    ...result,
    tools: shown
      .filter((tool) => view.exposed(tool.name) !== tool.name || !takenByRename.has(tool.name))
      .map((tool) => {
        const description = view.description(tool.name);
        return { ...tool, name: view.exposed(tool.name), ...(description !== undefined && { description }) };
      }),
  };
}

/** One JSON-RPC message, rewritten when it answers one of `ids` (a listing). */
function rewriteMessage(text: string, ids: Set<string>, view: ToolView): string | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof message !== "object" || message === null || !("result" in message) || !ids.has(idKey((message as Message).id))) return undefined;
  return JSON.stringify({ ...message, result: rewriteToolList((message as Message).result, view) });
}

/**
 * The upstream's answer with its listings rewritten: a JSON body whole (it is one message), an event stream event by
 * event — split on the blank line that ends each ([HTML §9.2.6](https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)),
 * so an event cut across chunks is joined first — and every other event passed on as it came.
 */
export async function rewriteResponse(response: Response, ids: Set<string>, view: ToolView): Promise<Response> {
  if (ids.size === 0 || response.body === null) return response;
  const type = response.headers.get("content-type") ?? "";
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  if (type.startsWith("application/json")) {
    const text = await response.text();
    return new Response(rewriteMessage(text, ids, view) ?? text, { status: response.status, statusText: response.statusText, headers });
  }
  if (!type.startsWith("text/event-stream")) return response;
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = "";
  const events = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        controller.enqueue(encoder.encode(`${rewriteEvent(block, ids, view)}\n\n`));
      }
    },
    flush(controller) {
      if (buffer) controller.enqueue(encoder.encode(buffer));
    },
  });
  return new Response(response.body.pipeThrough(events), { status: response.status, statusText: response.statusText, headers });
}

function rewriteEvent(block: string, ids: Set<string>, view: ToolView): string {
  const data = eventData(block);
  if (data === undefined) return block;
  const rewritten = rewriteMessage(data, ids, view);
  if (rewritten === undefined) return block;
  const kept = block.split("\n").filter((line) => !line.startsWith("data:"));
  return [...kept, `data: ${rewritten}`].join("\n");
}
