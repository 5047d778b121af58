import { declaredLength, type HeldBytes } from "./held-bytes";
import { messageReadAlready } from "../http/read-already";
import { readMessage, type RpcMessage } from "./message";

/**
 * The second step of the hot path: a POST's body, read at most once. Where the proxy decides on it — a tool policy,
 * pinning, the audit trail or the span that names the method — it is read whole, strictly (message.ts), and what goes
 * on is the message that was checked; else it is not read at all, only held as bytes when small (faster to send).
 */

/** Request bodies up to this size (declared) are read whole before they are sent on, even when nothing reads them. */
const WHOLE_BODY_BYTES = 64 * 1024;

/** A request's body as the proxy has it now. */
export type Outgoing =
  | {
      kind: "message";
      /** The message, read strictly: sent on serialised again (message.ts), never as the bytes that came. */
      message: RpcMessage | RpcMessage[];
      /** The body's size as it came. */
      bytes: number;
      /** `message` serialised already (a request built in-process: http/read-already.ts), sent as it is if unchanged. */
      serialised?: Uint8Array;
      release(): void;
    }
  | {
      kind: "body";
      /** Held whole (`Uint8Array`), streamed unread, or none. */
      body: Uint8Array | ReadableStream<Uint8Array> | null;
      release(): void;
    }
  /** Not a message the proxy passes on: the client's answer (a JSON-RPC error), the server never sees it. */
  | { kind: "refused"; response: Response; bytes: number };

const nothing = () => undefined;
const NO_BODY: Outgoing = { kind: "body", body: null, release: nothing };

export function createRequestReader(held: HeldBytes) {
  /**
   * `decide`: something decides on the message, so it is read. `replay`: the body may have to be sent again (an OAuth
   * connector, after a refresh), so a body up to a message's size is held even when nothing reads it. Either way the
   * bytes count against the held-bytes budgets (held-bytes.ts) until `release`.
   */
  return async function readRequest(
    userId: string,
    request: Request,
    { decide, replay }: { decide: boolean; replay: boolean },
  ): Promise<Outgoing> {
    if (request.method !== "POST") return NO_BODY;
    // Built in-process from a message read strictly at the edge (http/read-already.ts): that message, not read again.
    const given = messageReadAlready(request);
    if (given !== undefined) {
      // Still held as its body would be: the message-size limit and the held-bytes budgets apply the same.
      const bytes = given.body.byteLength;
      const message = given.message as RpcMessage;
      return { kind: "message", message, bytes, serialised: given.body, release: held.holdRead(userId, bytes) };
    }
    const body = request.body;
    if (body === null) return NO_BODY;
    if (decide) {
      const whole = await held.read(userId, request);
      const read = readMessage(whole.bytes, request.headers);
      if (read.ok) return { kind: "message", message: read.message, bytes: whole.bytes.byteLength, release: whole.release };
      whole.release();
      return { kind: "refused", response: read.response, bytes: whole.bytes.byteLength };
    }
    // A small body of declared length is sent faster as bytes than as a stream fetch must pipe (bench/RESULTS.md,
    // "Governance"); an OAuth connector keeps one up to a message's size, to replay it after a refresh. Either streams
    // instead when the held-bytes budget has no room for it.
    const declared = declaredLength(request);
    const small = replay ? held.maxMessageBytes : Math.min(WHOLE_BODY_BYTES, held.maxMessageBytes);
    if (declared !== undefined && declared <= small) {
      const whole = await held.readIfRoom(userId, request);
      if (whole) return { kind: "body", body: whole.bytes, release: whole.release };
    }
    return { kind: "body", body, release: nothing };
  };
}
export type RequestReader = ReturnType<typeof createRequestReader>;
