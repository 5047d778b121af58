import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  classifyInboundRequest,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/server";

type Route = ReturnType<typeof classifyInboundRequest>;
type Fields = { body: unknown; protocolVersionHeader?: string; mcpMethodHeader?: string; mcpNameHeader?: string };

/** The envelope keys the SDK validates (MCP 2026-07-28 schema `RequestMetaEnvelope`), in a fixed order for the key. */
const ENVELOPE_KEYS = [PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY];
const REQUEST_KEYS = new Set(["jsonrpc", "id", "method", "params"]);
const RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task";
/** Distinct (method, headers, envelope) outcomes kept: a client sends the same envelope on every request. */
const MAX_KEPT = 256;
/** A longer key (a client's large capabilities) is not kept: at most 256 × 4 KiB held, whatever clients send. */
const MAX_KEY_CHARS = 4096;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
/** zod's `z.number().int()`, which the SDK's id and progress token schemas use, takes safe integers only. */
const isIdLike = (v: unknown) => typeof v === "string" || Number.isSafeInteger(v);

/**
 * The SDK's `JSONRPCRequestSchema` (strict: `jsonrpc` "2.0", an id that is a string or an integer, a string method,
 * params an object whose `_meta` is an object with an optional string-or-integer `progressToken` and an optional
 * related-task object naming a string `taskId`), checked by hand: what the SDK's zod guard accepts, and nothing more.
 */
function isPlainRequest(body: Record<string, unknown>): boolean {
  for (const key in body) if (!REQUEST_KEYS.has(key)) return false;
  if (body.jsonrpc !== "2.0" || !isIdLike(body.id) || typeof body.method !== "string") return false;
  const params = body.params;
  if (params === undefined) return true;
  if (!isObject(params)) return false;
  const meta = params._meta;
  if (meta === undefined) return true;
  if (!isObject(meta)) return false;
  if (meta.progressToken !== undefined && !isIdLike(meta.progressToken)) return false;
  const task = meta[RELATED_TASK_META_KEY];
  return task === undefined || (isObject(task) && typeof task.taskId === "string");
}

/**
 * The SDK's era classification (`classifyInboundRequest`, SEP-2243 body-primary), asked once per distinct request shape.
 * It costs some 50 µs a request, nearly all of it zod (bench/RESULTS.md "2026-07-28 clients"); and for a well-formed
 * JSON-RPC request other than `initialize`, its outcome depends only on the method, the `MCP-Protocol-Version` and
 * `Mcp-Method` headers and the envelope's keys in `_meta` (the SDK's `classifyRequestBody`: the envelope is validated
 * as a loose object, so other `_meta` keys and the params do not count), which a client sends the same every time. So
 * such a request is classified as a stand-in that carries only those, and the outcome kept; anything else — a
 * notification, a response, a batch, `initialize`, a malformed request — is classified whole, every time.
 */
export function createClassifier(classify: (fields: Fields & { httpMethod: string }) => Route = classifyInboundRequest) {
  const kept = new Map<string, Route>();
  return (fields: Fields): Route => {
    const { body } = fields;
    if (!isObject(body) || body.method === "initialize" || !("id" in body) || !isPlainRequest(body))
      return classify({ httpMethod: "POST", ...fields });
    const meta = (body.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
    // (No `_meta` at all is its own outcome: the SDK names `_meta` as what is missing.)
    let envelope: Record<string, unknown> | null = null;
    if (meta) {
      envelope = {};
      for (const key of ENVELOPE_KEYS) if (key in meta) envelope[key] = meta[key];
    }
    const key = JSON.stringify([body.method, fields.protocolVersionHeader ?? null, fields.mcpMethodHeader ?? null, envelope]);
    let route = kept.get(key);
    if (route === undefined) {
      if (key.length > MAX_KEY_CHARS) return classify({ httpMethod: "POST", ...fields });
      route = classify({
        httpMethod: "POST",
        body: { jsonrpc: "2.0", id: 0, method: body.method, params: envelope ? { _meta: envelope } : {} },
        ...(fields.protocolVersionHeader !== undefined && { protocolVersionHeader: fields.protocolVersionHeader }),
        ...(fields.mcpMethodHeader !== undefined && { mcpMethodHeader: fields.mcpMethodHeader }),
      });
      if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value!);
      kept.set(key, route);
    }
    // The outcome is of the stand-in: a modern route carries the request as it came.
    return route.kind === "modern" ? { ...route, message: body as never } : route;
  };
}
