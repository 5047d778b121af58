import { memberSpan } from "../http/strict-json";

/**
 * A member's listing, parsed once for as long as the member answers it with the same bytes (bench/RESULTS.md "A
 * member's listing parsed once"). A virtual server lists its members again and again — each client session, each
 * listing — and a member's answer to the same listing differs from the last only in its request id (MCP 2025-11-25
 * basic: an id is never used twice in a session). Parsing each answer was most of a listing's CPU (~110 µs a 9 KB answer
 * under load, and the garbage of every tool's objects).
 *
 * Exact, not a guess: the kept answer's top-level `id` value is found by a scan of its bytes (strict-json.ts
 * memberSpan; an answer with no `id`, or two, keeps nothing), and a new answer is reused only when its bytes equal the kept ones
 * byte for byte around that value and hold the new id's JSON there — so its parse is the kept message's with the new
 * id. An id a member echoes elsewhere (in a description) never matches, nor does an answer whose id is written another
 * way. Kept messages are shared between listings and sessions: nothing that reads a member's answer changes it.
 */

/** Answers larger than this are parsed each time (a listing that large is rare, and would crowd out the rest). */
const MAX_ANSWER_BYTES = 1024 * 1024;
/** All kept answers' bytes together, at most; the longest unused go first. */
const MAX_KEPT_BYTES = 8 * 1024 * 1024;

type Kept = {
  bytes: Buffer;
  /** The id the kept answer answered, and its message as parsed. */
  id: string;
  message: Record<string, unknown>;
  /** The byte range of its top-level `id` value: found when first needed; null when it has none to find. */
  span?: [number, number] | null;
};

const decoder = new TextDecoder();

export function createAnswerReuse(maxKeptBytes = MAX_KEPT_BYTES) {
  const kept = new Map<string, Kept>();
  let keptBytes = 0;

  /**
   * The kept answer's top-level `id` value, in bytes: its bytes scanned one character a byte, as JSON's structure and
   * escapes are ASCII and no byte of a UTF-8 sequence is. Not its decoded text, whose positions are not the bytes'
   * when a decoder drops a byte order mark or replaces bytes that are not UTF-8 (found by review: a member could then
   * move the window onto another value of its answer). A text that does not start with `{` (a byte order mark) keeps
   * nothing.
   */
  const spanOf = (entry: Kept): [number, number] | null => memberSpan(entry.bytes.toString("latin1"), "id") ?? null;

  /** The kept answer's message with `id`, if `bytes` are the kept answer's with only its id replaced by `id`. */
  function reused(entry: Kept, bytes: Uint8Array, id: string): Record<string, unknown> | undefined {
    const idJson = JSON.stringify(id);
    // Most answers to another listing differ in length: no scan of the kept answer for them.
    if (bytes.byteLength - entry.bytes.length !== idJson.length - JSON.stringify(entry.id).length) return undefined;
    entry.span ??= spanOf(entry);
    if (!entry.span) return undefined;
    const [start, end] = entry.span;
    const given = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (given.length !== entry.bytes.length - (end - start) + idJson.length) return undefined;
    const idEnd = start + idJson.length;
    if (entry.bytes.compare(given, 0, start, 0, start) !== 0) return undefined;
    if (entry.bytes.compare(given, idEnd, given.length, end, entry.bytes.length) !== 0) return undefined;
    if (given.toString("latin1", start, idEnd) !== idJson) return undefined;
    return { ...entry.message, id };
  }

  function keep(key: string, bytes: Uint8Array, message: Record<string, unknown>, id: string) {
    forget(key);
    if (bytes.byteLength > MAX_ANSWER_BYTES || bytes.byteLength > maxKeptBytes) return;
    // A copy: the answer's own bytes are the proxy's to let go.
    kept.set(key, { bytes: Buffer.from(bytes), id, message });
    keptBytes += bytes.byteLength;
    for (const [oldest, entry] of kept) {
      if (keptBytes <= maxKeptBytes) break;
      kept.delete(oldest);
      keptBytes -= entry.bytes.length;
    }
  }

  function forget(key: string) {
    const entry = kept.get(key);
    if (!entry) return;
    kept.delete(key);
    keptBytes -= entry.bytes.length;
  }

  return {
    /**
     * The message in `bytes`, the answer to request `id`: `key` names what was asked (the member, the listing, its
     * cursor), so that the same answer to it next time is not parsed again; without a key, parsed.
     */
    message(key: string | undefined, bytes: Uint8Array, id: string): unknown {
      const entry = key === undefined ? undefined : kept.get(key);
      if (entry) {
        const message = reused(entry, bytes, id);
        if (message) {
          // Used: the last to go.
          kept.delete(key!);
          kept.set(key!, entry);
          return message;
        }
      }
      const message: unknown = JSON.parse(decoder.decode(bytes));
      if (key !== undefined) {
        if (typeof message === "object" && message !== null && !Array.isArray(message) && "id" in message && message.id === id)
          keep(key, bytes, message as Record<string, unknown>, id);
        else forget(key);
      }
      return message;
    },
    /** The bytes kept now (for tests). */
    keptBytes: () => keptBytes,
  };
}
export type AnswerReuse = ReturnType<typeof createAnswerReuse>;
