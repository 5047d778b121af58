import { UpstreamFailed } from "../http-errors/errors";
import { directStream } from "../http/direct-stream";
import { eventData } from "./event-data";
import { parseStrictJson, type Levels } from "../http/strict-json";

/**
 * How an answer ended, for the observer (observe.ts): from a JSON answer read whole, or from the last event of an event
 * stream, whose bytes pass on unchanged as they are counted.
 */

export type Observed = { errorCode: number | null; bytes: number; result?: unknown };

const decoder = new TextDecoder();

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

const ERROR_KEY = Buffer.from('"error"');
/**
 * Whether an answer mentions `"error"` anywhere: only such an answer can be an error (a result is parsed only to be
 * captured). One native search: a JS loop over the answer's quotes cost ~20 µs for a 9 KB tool listing, 0.5 µs this way.
 */
const mentionsError = (bytes: Uint8Array): boolean =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(ERROR_KEY) >= 0;

/** How a JSON answer read whole ended. */
export function wholeOutcome(bytes: Uint8Array, capture: boolean): Observed {
  const parse = capture || mentionsError(bytes);
  return { ...(parse ? outcomeOf(bytes, capture) : { errorCode: null }), bytes: bytes.byteLength };
}

/**
 * The declared length of an upstream's answer the observer reads whole at once (forward.ts, TakeWhole): plain JSON,
 * not compressed, up to READ_WHOLE_BYTES. Else undefined: it passes through readOutcome.
 */
export function wholeLength(headers: Headers): number | undefined {
  if (!(headers.get("content-type") ?? "").startsWith("application/json")) return undefined;
  if ((headers.get("content-encoding") ?? "identity") !== "identity") return undefined;
  const declared = Number(headers.get("content-length") ?? Number.NaN);
  return Number.isSafeInteger(declared) && declared >= 0 && declared <= READ_WHOLE_BYTES ? declared : undefined;
}

/**
 * The answer, passed on unchanged; `done` is told how it ended, once. A JSON answer is read whole before it is passed
 * on (it is one message; a stream wrapped around it cost a fifth of the proxy's CPU under load) while it stays under
 * READ_WHOLE_BYTES and the held-bytes budget allows; past that, and for event streams, the bytes are counted as they
 * pass and the end kept to be read. (An answer of declared length is read whole before it is a stream at all:
 * wholeLength.)
 */
export async function readOutcome(
  response: Response,
  capture: boolean,
  done: (observed: Observed) => void,
  hold: Hold = () => () => undefined,
): Promise<Response> {
  const type = response.headers.get("content-type") ?? "";
  const encoded = (response.headers.get("content-encoding") ?? "identity") !== "identity";
  const json = type.startsWith("application/json");
  if (response.body === null || encoded || !(json || type.startsWith("text/event-stream"))) {
    done({ errorCode: null, bytes: Number(response.headers.get("content-length") ?? 0) });
    return response;
  }
  let source: ReadableStream<Uint8Array> = response.body;
  if (json) {
    const reader = response.body.getReader();
    const { whole, chunks } = await readUpTo(reader, hold).catch((e: Error) => {
      throw new UpstreamFailed(`The MCP server broke off its answer: ${e.message}`);
    });
    if (whole) {
      const bytes = Buffer.concat(chunks);
      done(wholeOutcome(bytes, capture));
      return new Response(bytes, { status: response.status, statusText: response.statusText, headers: response.headers });
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
  // One stream between the answer and the client (http/direct-stream.ts), the outcome read as it passes; a client
  // that goes away ends the exchange too: what was seen so far is its record.
  const { body } = directStream(source, answerTap(json, capture, done));
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** Told each chunk of an answer as it passes to the client, and its end (however it comes): `done` once, at the end. */
export type AnswerTap = { chunk(bytes: Uint8Array): void; end(): void };

/**
 * The outcome of an answer read as it passes: its bytes counted and its end kept. A JSON answer is one message, read
 * if it fitted in what was kept; an event stream's answer is its last event.
 */
export function answerTap(json: boolean, capture: boolean, done: (observed: Observed) => void): AnswerTap {
  let bytes = 0;
  let tail = "";
  let told = false;
  return {
    chunk(value) {
      bytes += value.byteLength;
      tail = (tail + decoder.decode(value, { stream: true })).slice(-TAIL_BYTES);
    },
    end() {
      if (told) return;
      told = true;
      const data = json ? (bytes <= TAIL_BYTES ? tail : undefined) : lastEventData(tail);
      done({ ...(data === undefined ? { errorCode: null } : outcomeOf(data, capture)), bytes });
    },
  };
}
