import { eventData } from "./event-data";
import type { RpcMessage } from "./message";
import { parseStrictJson, type Levels } from "./strict-json";

/**
 * What the audit trail learns of one MCP message on its way through the proxy (README "Audit trail"): the request's
 * method and name, from the message the proxy read once for every decision (message.ts); and
 * how the answer ended, from a JSON answer read whole or from the last event of an event stream, whose bytes pass on
 * unchanged as they are counted.
 */

export type Described = { method: string | null; name: string | null; arguments?: unknown };
export type Observed = { errorCode: number | null; bytes: number; result?: unknown };

const decoder = new TextDecoder();
const ERROR_KEY = '"error"';

/**
 * The request's method and what it names, from the message the proxy read (message.ts: its routing headers were
 * checked against it). A message that could not be read has neither: it never reached the server.
 */
export function describeRequest(message: RpcMessage | RpcMessage[] | undefined, capture: boolean): Described {
  if (message === undefined) return { method: null, name: null };
  if (Array.isArray(message)) return { method: "batch", name: null };
  const params = message.params as { name?: unknown; uri?: unknown; arguments?: unknown } | undefined;
  const name = typeof params?.name === "string" ? params.name : typeof params?.uri === "string" ? params.uri : null;
  return {
    method: typeof message.method === "string" ? message.method : null,
    name,
    ...(capture && params?.arguments !== undefined && { arguments: params.arguments }),
  };
}

/** The levels of an answer the audit trail reads: the message and its error. */
const ANSWER: Levels = { members: { error: {} } };

/** A JSON-RPC response's error code (or its result, when captured). */
function outcomeOf(text: Uint8Array | string, capture: boolean): { errorCode: number | null; result?: unknown } {
  let message: unknown;
  try {
    message = parseStrictJson(text, ANSWER);
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
  const last = tail
    .replace(/\r\n?/g, "\n")
    .split("\n\n")
    .findLast((block) => block.includes("data:"));
  return last === undefined ? undefined : eventData(last);
}

/** How much of a stream's end is kept to find its answer. */
const TAIL_BYTES = 64 * 1024;
/** JSON answers of a declared length up to this are read whole for their outcome; others are counted as they pass. */
const READ_WHOLE_BYTES = 1024 * 1024;

/** Holds `bytes` of an answer in memory against the proxy's budget (held-bytes.ts): the release, or undefined when spent. */
export type Hold = (bytes: number) => (() => void) | undefined;

/**
 * The first chunks of a JSON answer, up to READ_WHOLE_BYTES, held against the budget: `whole` when that was all of
 * it, else what was read (to be passed on before the rest, which streams).
 */
async function readUpTo(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  hold: Hold,
): Promise<{ whole: boolean; chunks: Uint8Array[] }> {
  const chunks: Uint8Array[] = [];
  const releases: (() => void)[] = [];
  let size = 0;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) return { whole: true, chunks };
      chunks.push(next.value);
      size += next.value.byteLength;
      const release = size <= READ_WHOLE_BYTES ? hold(next.value.byteLength) : undefined;
      if (!release) return { whole: false, chunks };
      releases.push(release);
    }
  } finally {
    for (const release of releases) release();
  }
}

/**
 * The answer, passed on unchanged; `done` is told how it ended, once. A JSON answer is read whole before it is passed
 * on (it is one message; a stream wrapped around it cost a fifth of the proxy's CPU under load) while it stays under
 * READ_WHOLE_BYTES and the held-bytes budget allows; past that, and for event streams, the bytes are counted as they
 * pass and the end kept to be read.
 */
export async function tapResponse(
  response: Response,
  capture: boolean,
  done: (observed: Observed) => void,
  hold: Hold = () => () => undefined,
): Promise<Response> {
  const type = response.headers.get("content-type") ?? "";
  const length = response.headers.get("content-length");
  const encoded = (response.headers.get("content-encoding") ?? "identity") !== "identity";
  const json = type.startsWith("application/json");
  if (response.body === null || encoded || !(json || type.startsWith("text/event-stream"))) {
    done({ errorCode: null, bytes: Number(length ?? 0) });
    return response;
  }
  let source: ReadableStream<Uint8Array> = response.body;
  if (json) {
    const reader = response.body.getReader();
    const { whole, chunks } = await readUpTo(reader, hold);
    if (whole) {
      const buffer = Buffer.concat(chunks);
      // Only an answer that has `"error"` somewhere can be an error; a result is parsed only to be captured.
      const parse = capture || buffer.includes(ERROR_KEY);
      done({ ...(parse ? outcomeOf(buffer, capture) : { errorCode: null }), bytes: buffer.byteLength });
      return new Response(buffer, { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    source = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        const next = chunks.shift() ?? (await reader.read()).value;
        if (next === undefined) controller.close();
        else controller.enqueue(next);
      },
      cancel: (reason) => reader.cancel(reason),
    });
  }
  let bytes = 0;
  let tail = "";
  let told = false;
  const tell = () => {
    if (told) return;
    told = true;
    // A JSON answer is one message: read if it fitted in what was kept. An event stream's answer is its last event.
    const data = json ? (bytes <= TAIL_BYTES ? tail : undefined) : lastEventData(tail);
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
  const reader = source.pipeThrough(counted).getReader();
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
