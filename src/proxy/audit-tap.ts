import { eventData } from "./event-data";

/**
 * What the audit trail learns of one MCP message on its way through the proxy (README "Audit trail"): the request's
 * method and name, from the 2026-07-28 routing headers when they are there, else from the body the proxy read; and
 * how the answer ended, from a JSON answer read whole or from the last event of an event stream, whose bytes pass on
 * unchanged as they are counted.
 */

export type Described = { method: string | null; name: string | null; arguments?: unknown };
export type Observed = { errorCode: number | null; bytes: number; result?: unknown };

const decoder = new TextDecoder();
const ERROR_KEY = '"error"';

export function describeRequest(bytes: Uint8Array | undefined, headers: Headers, capture: boolean): Described {
  const method = headers.get("mcp-method");
  if (method !== null && !capture) return { method, name: headers.get("mcp-name") };
  if (!bytes) return { method, name: headers.get("mcp-name") };
  let message: unknown;
  try {
    message = JSON.parse(decoder.decode(bytes));
  } catch {
    return { method: null, name: null };
  }
  if (Array.isArray(message)) return { method: "batch", name: null };
  if (typeof message !== "object" || message === null) return { method: null, name: null };
  const m = message as { method?: unknown; params?: { name?: unknown; uri?: unknown; arguments?: unknown } };
  const name = typeof m.params?.name === "string" ? m.params.name : typeof m.params?.uri === "string" ? m.params.uri : null;
  return { method: typeof m.method === "string" ? m.method : null, name, ...(capture && m.params?.arguments !== undefined && { arguments: m.params.arguments }) };
}

/** A JSON-RPC response's error code (or its result, when captured). */
function outcomeOf(text: string, capture: boolean): { errorCode: number | null; result?: unknown } {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return { errorCode: null };
  }
  if (typeof message !== "object" || message === null) return { errorCode: null };
  const m = message as { error?: { code?: unknown }; result?: unknown };
  if (m.error && typeof m.error.code === "number") return { errorCode: m.error.code };
  return { errorCode: null, ...(capture && m.result !== undefined && { result: m.result }) };
}

/** The JSON-RPC message of an event stream's last event in `tail` (the answer comes last). */
function lastEventData(tail: string): string | undefined {
  const last = tail.replace(/\r\n?/g, "\n").split("\n\n").findLast((block) => block.includes("data:"));
  return last === undefined ? undefined : eventData(last);
}

/** How much of a stream's end is kept to find its answer. */
const TAIL_BYTES = 64 * 1024;
/** JSON answers up to this size are read whole for their outcome; larger ones pass unread (recorded by status). */
const READ_WHOLE_BYTES = 1024 * 1024;

/**
 * The answer, passed on unchanged; `done` is told how it ended, once. A JSON answer is read whole before it is passed
 * on (it is one message; a stream wrapped around it cost a fifth of the proxy's CPU under load).
 */
export async function tapResponse(response: Response, capture: boolean, done: (observed: Observed) => void): Promise<Response> {
  const type = response.headers.get("content-type") ?? "";
  const length = response.headers.get("content-length");
  const encoded = (response.headers.get("content-encoding") ?? "identity") !== "identity";
  if (response.body === null || encoded) {
    done({ errorCode: null, bytes: Number(length ?? 0) });
    return response;
  }
  if (type.startsWith("application/json") && Number(length ?? 0) <= READ_WHOLE_BYTES) {
    const buffer = await response.arrayBuffer();
    // Only an answer that has `"error"` somewhere can be an error; a result is parsed only to be captured.
    const parse = capture || Buffer.from(buffer).includes(ERROR_KEY);
    done({ ...(parse ? outcomeOf(decoder.decode(buffer), capture) : { errorCode: null }), bytes: buffer.byteLength });
    return new Response(buffer, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
  if (!type.startsWith("text/event-stream")) {
    done({ errorCode: null, bytes: Number(length ?? 0) });
    return response;
  }
  let bytes = 0;
  let tail = "";
  let told = false;
  const tell = () => {
    if (told) return;
    told = true;
    const data = lastEventData(tail);
    done({ ...(data === undefined ? { errorCode: null } : outcomeOf(data, capture)), bytes });
  };
  const counted = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      bytes += chunk.byteLength;
      tail = (tail + decoder.decode(chunk, { stream: true })).slice(-TAIL_BYTES);
      controller.enqueue(chunk);
    },
    flush: tell,
  });
  const reader = response.body.pipeThrough(counted).getReader();
  // A client that goes away ends the exchange too: what was seen so far is its record.
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done: ended, value } = await reader.read().catch(() => ({ done: true as const, value: undefined }));
        if (ended) {
          tell();
          controller.close();
        } else controller.enqueue(value);
      },
      cancel(reason) {
        tell();
        return reader.cancel(reason).catch(() => undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
