import type { CompiledToolPolicy } from "../connectors/tool-policy";
import { eventData } from "./event-data";
import { readCapped } from "../http/read-capped";
import { rpcError, type RpcMessage } from "./message";
import { MalformedJson, parseStrictJson, type Levels } from "../http/strict-json";
import { seenTool, type Pinning } from "./tool-pins";

/** A connector's policy on the wire, with its pins when the policy pins tool definitions. */
export type ToolView = CompiledToolPolicy & { pinning?: Pinning };

/**
 * A connector's tool policy on the wire (docs/behaviour.md "Tool policy"), on messages read once by message.ts. Requests:
 * a call of a hidden tool is answered here ([MCP 2025-11-25 tools §Error handling](https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling):
 * -32602 for an unknown tool), a renamed one goes on under the server's name. Responses to `tools/list`, JSON or
 * an event stream, are filtered and rewritten; everything else passes as it came. Connectors without a policy never
 * come here.
 */

export type FilteredRequest =
  | { kind: "answer"; response: Response }
  | { kind: "forward"; message: RpcMessage | RpcMessage[]; mcpName?: string; listIds: Set<string> };

/** JSON-RPC ids as keys: 1 and "1" are different ids (a number kept as its lexeme serialises as that lexeme). */
const idKey = (id: unknown) => JSON.stringify(id);

/** A request as the policy lets it go on, read once and checked already (message.ts). */
export function filterRequest(message: RpcMessage | RpcMessage[], headers: Headers, view: ToolView): FilteredRequest {
  const unchanged: FilteredRequest = { kind: "forward", message, listIds: new Set() };
  if (Array.isArray(message)) {
    return {
      kind: "answer",
      response: rpcError(
        null,
        -32600,
        "Batches are not accepted by a connector with a tool policy (MCP 2025-06-18 removed JSON-RPC batching)",
        400,
      ),
    };
  }
  const m = message;
  if (m.method === "tools/list" && m.id !== undefined) return { ...unchanged, listIds: new Set([idKey(m.id)]) };
  if (m.method !== "tools/call") return unchanged;
  const params = m.params as { name?: unknown };
  // A name that is not a string is no tool the policy can judge; a server that coerces it (["beta"] is "beta" as a
  // JavaScript property key) would run whatever it names.
  if (typeof params !== "object" || params === null || Array.isArray(params) || typeof params.name !== "string") {
    return { kind: "answer", response: rpcError(m.id, -32602, "Invalid params: tools/call needs params.name, a string") };
  }
  const original = view.original(params.name);
  if (original === undefined) return { kind: "answer", response: rpcError(m.id, -32602, `Unknown tool: ${params.name}`) };
  if (view.pinning?.hiddenByName(original)) {
    return {
      kind: "answer",
      response: rpcError(
        m.id,
        -32602,
        `Unknown tool: ${params.name} (its definition changed since it was approved: an approval is needed)`,
      ),
    };
  }
  if (original === params.name) return unchanged;
  return {
    kind: "forward",
    message: { ...m, params: { ...params, name: original } },
    ...(headers.has("mcp-name") && { mcpName: original }),
    listIds: new Set(),
  };
}

/** A tools/list result as clients may see it: hidden tools gone, names and descriptions as the policy says. */
export function rewriteToolList(result: unknown, view: ToolView): unknown {
  if (typeof result !== "object" || result === null || !Array.isArray((result as { tools?: unknown }).tools)) return result;
  const tools = (result as { tools: unknown[] }).tools.filter(
    (tool): tool is { name: string } => typeof (tool as { name?: unknown })?.name === "string",
  );
  let hiddenByPins = (_: { name: string }) => false;
  if (view.pinning) {
    const pinning = view.pinning;
    const seen = new Map(tools.map((tool) => [tool, seenTool(tool)]));
    pinning.observe([...seen.values()], (result as { nextCursor?: unknown }).nextCursor === undefined);
    hiddenByPins = (tool) => pinning.hidden(tool.name, seen.get(tool)!.digest);
  }
  const shown = tools.filter((tool) => view.visible(tool.name) && !hiddenByPins(tool));
  // A tool renamed to another's own name takes it: the other would not be callable, so it is not listed either.
  const takenByRename = new Set(
    shown.filter((tool) => view.exposed(tool.name) !== tool.name).map((tool) => view.exposed(tool.name)),
  );
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

/** The levels of a listing's answer the proxy reads: the message, its result, each tool. */
const LISTING: Levels = { members: { result: { members: { tools: { elements: {} } } } } };

/** What became of one message of the upstream's answer: passed as it came, rewritten, or not readable (dropped). */
type Rewritten = { kind: "as-is" } | { kind: "rewritten"; text: string } | { kind: "unreadable"; why: string };

/**
 * One JSON-RPC message, rewritten when it answers one of `ids` (a listing). What cannot be read strictly may be the
 * listing itself, which the policy or pinning would then not have filtered: it is not passed on.
 */
function rewriteMessage(text: Uint8Array | string, ids: Set<string>, view: ToolView): Rewritten {
  let message: unknown;
  try {
    message = parseStrictJson(text, LISTING);
  } catch (e) {
    if (e instanceof MalformedJson) return { kind: "unreadable", why: e.message };
    throw e;
  }
  if (typeof message !== "object" || message === null || !("result" in message) || !ids.has(idKey((message as RpcMessage).id)))
    return { kind: "as-is" };
  return {
    kind: "rewritten",
    text: JSON.stringify({ ...message, result: rewriteToolList((message as RpcMessage).result, view) }),
  };
}

/** The listing's answer when the server's could not be used: a JSON-RPC error for the listing's id (JSON-RPC 2.0 §5.1: -32603). */
const listingFailed = (ids: Set<string>, why: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: JSON.parse([...ids][0] ?? "null"),
    error: { code: -32603, message: `The MCP server's tools/list answer was not passed on: ${why}` },
  });

/**
 * The upstream's answer with its listings rewritten: a JSON body whole (it is one message), an event stream event by
 * event — split on the blank line that ends each ([HTML §9.2.6](https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)),
 * so an event cut across chunks is joined first — and every other event passed on as it came. A listing is read
 * whole, so it is held to `maxBytes` (PROXY__MAX_MESSAGE_BYTES) like a request the proxy reads.
 */
export async function rewriteResponse(response: Response, ids: Set<string>, view: ToolView, maxBytes: number): Promise<Response> {
  if (ids.size === 0 || response.body === null) return response;
  const type = response.headers.get("content-type") ?? "";
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  const tooLarge = `it is larger than ${maxBytes} bytes (PROXY__MAX_MESSAGE_BYTES)`;
  if (type.startsWith("application/json")) {
    const bytes = await readCapped(response.body, maxBytes);
    const rewritten: Rewritten = bytes === undefined ? { kind: "unreadable", why: tooLarge } : rewriteMessage(bytes, ids, view);
    const body =
      rewritten.kind === "rewritten"
        ? rewritten.text
        : rewritten.kind === "unreadable"
          ? listingFailed(ids, rewritten.why)
          : new Uint8Array(bytes!);
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
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
      if (buffer.length > maxBytes) {
        controller.enqueue(encoder.encode(`event: message\ndata: ${listingFailed(ids, `an event of it is ${tooLarge}`)}\n\n`));
        controller.terminate();
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
  // No data, or none (a priming event, MCP 2025-11-25 resumability): nothing to read.
  if (data === undefined || data === "") return block;
  const rewritten = rewriteMessage(data, ids, view);
  if (rewritten.kind === "as-is") return block;
  const kept = block.split("\n").filter((line) => !line.startsWith("data:"));
  // An unreadable message may be the listing: the client gets the listing's error in its place, not a wait for an
  // answer that never comes (the event's other fields stay: an event id still counts for resumption).
  return [...kept, `data: ${rewritten.kind === "rewritten" ? rewritten.text : listingFailed(ids, rewritten.why)}`].join("\n");
}
