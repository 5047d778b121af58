import { MODERN_PROTOCOL_VERSION, PROTOCOL_VERSION_META_KEY } from "../gateway/era";
import type { FetchLike } from "../http/fetch";
import { readCapped } from "../http/read-capped";
import { eventsOf } from "../http/server-sent-events";
import { VERSION } from "../version";

/** The most of a `server/discover` answer read: its capabilities and instructions, never a large document. */
const MAX_ANSWER_BYTES = 256 * 1024;
const DISCOVER_ID = "connector-service-discover";

/**
 * The 2026-07-28 revisions a server says it speaks: MCP 2026-07-28 `server/discover`, sent as that revision sends every
 * request (the envelope in `_meta`, SEP-2243's `MCP-Protocol-Version` and `Mcp-Method` headers). A 2025 server refuses
 * it (a POST without a session that is not an initialize) or answers an error: then none, and the server is known by
 * its `initialize` alone (handshake.ts). Whatever goes wrong here only means "none": it never fails a connect.
 */
export async function discoverVersions(
  url: URL,
  fetch: FetchLike,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<string[]> {
  try {
    const response = await fetch(url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        ...headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": MODERN_PROTOCOL_VERSION,
        "mcp-method": "server/discover",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: DISCOVER_ID,
        method: "server/discover",
        params: {
          _meta: {
            [PROTOCOL_VERSION_META_KEY]: MODERN_PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientInfo": { name: "connector-service", version: VERSION },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return [];
    }
    const bytes = await readCapped(response.body, MAX_ANSWER_BYTES);
    if (!bytes) return [];
    return supportedVersions(bytes.toString("utf8"), response.headers.get("content-type") ?? "");
  } catch {
    return [];
  }
}

/** `result.supportedVersions` of the answer to our discover, as JSON or as an event stream's message (MCP transports). */
export function supportedVersions(text: string, contentType: string): string[] {
  const candidates = contentType.startsWith("text/event-stream")
    ? eventsOf(text).flatMap((event) => (event.data ? [event.data] : []))
    : [text];
  for (const candidate of candidates) {
    let message: unknown;
    try {
      message = JSON.parse(candidate);
    } catch {
      continue;
    }
    const { id, result } = (message ?? {}) as { id?: unknown; result?: { supportedVersions?: unknown } };
    if (id !== DISCOVER_ID || !Array.isArray(result?.supportedVersions)) continue;
    return result.supportedVersions.filter((v): v is string => typeof v === "string" && /^\d{4}-\d{2}-\d{2}$/.test(v));
  }
  return [];
}
