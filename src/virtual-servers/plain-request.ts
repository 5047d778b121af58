import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, JSONRPCMessageSchema, McpError, type JSONRPCMessage, type Result } from "@modelcontextprotocol/sdk/types.js";
import { wholeAnswerOf } from "../http/read-already";
import { serverSentEvents, type ServerSentEvent } from "../http/server-sent-events";
import { sessionPost } from "../upstream/session-post";
import type { Cancellation } from "./cancellation";
import { createAnswerReuse } from "./answer-reuse";

/** A member's open session as a plain request needs it (member-session.ts). */
export type PlainSession = {
  /** The member's URL (any: the exchange routes by connector id). */
  url: string;
  /** What the session agreed at initialize (basic/transports "Session Management", "Protocol Version Header"). */
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  /** One HTTP request on the session (the member session's own fetch: span headers, the proxy as the caller). */
  fetch(request: Request): Promise<Response>;
  /** A message on the answer's stream that is not the answer (a member's request or notification): the SDK client's. */
  deliver(message: JSONRPCMessage): void;
  /** Tells the member the request is cancelled (basic/utilities/cancellation), as the SDK client would. */
  cancel(requestId: string, reason: string): void;
};

/** The members' listings, each parsed once while it stays the same (answer-reuse.ts): one for the process. */
const answers = createAnswerReuse();

/** What a listing's page asked (the member, the method, the page), for answer-reuse.ts. */
const listingKey = (to: PlainSession, method: string, params: Record<string, unknown> | undefined) =>
  `${to.url}\n${method}\n${typeof params?.cursor === "string" ? params.cursor : ""}`;

type Answer = { jsonrpc: "2.0"; id: string; result?: unknown; error?: { code: number; message: string; data?: unknown } };

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * The answer to request `id`, by the shape the SDK's schema gives it (JSON-RPC 2.0 §5: `jsonrpc`, the `id`, and a
 * `result` object or an `error` with an integer code and a message, nothing else beside them).
 */
function isAnswerTo(message: unknown, id: string): message is Answer {
  if (!isObject(message) || message.jsonrpc !== "2.0" || message.id !== id || Object.keys(message).length !== 3) return false;
  if (isObject(message.result)) return true;
  const { error } = message;
  return isObject(error) && Number.isInteger(error.code) && typeof error.message === "string";
}

/** Plainly the answer: nothing in it that the SDK's schema could refuse (a result's `_meta` is the schema's to check). */
const isPlainAnswerTo = (message: unknown, id: string): message is Answer =>
  isAnswerTo(message, id) && !(isObject(message.result) && message.result._meta !== undefined);

/**
 * A plain request (no progress asked) on a member's open session, sent without the SDK client (bench/RESULTS.md
 * "Virtual servers, a call's own path"): the message is built once and sent through the member's proxy URL in-process
 * as the SDK client's would be, and the member's answer is read with a plain parse — checked against the SDK's schema
 * only when it is not plainly the answer, so that what the SDK would refuse is refused with its own error. Everything else
 * the member sends with it (a request to the client during a call, a notification) goes to the SDK client (`deliver`),
 * which answers it on the session as it does its own. The outcomes are the SDK client's: the member's error as an
 * McpError, a timeout as -32001 "Request timed out" and notifications/cancelled sent, an aborted `cancel` likewise,
 * an HTTP error as a StreamableHTTPError (404: the session was forgotten).
 */
export function sendPlain(
  to: PlainSession,
  id: string,
  method: string,
  params: Record<string, unknown> | undefined,
  options: {
    timeout: number;
    cancel?: Cancellation | undefined;
    /** Where what the member sends with the answer goes, if not to the session's own `deliver`. */
    deliver?: ((message: JSONRPCMessage) => void) | undefined;
    /** A page of a listing (merge.ts): its answer may be the last one's again, parsed once (answer-reuse.ts). */
    listing?: boolean | undefined;
  },
): Promise<Result> {
  const { cancel: cancelled, timeout } = options;
  return new Promise<Result>((resolve, reject) => {
    if (cancelled?.aborted) return reject(cancelled.reason);
    let done = false;
    const settle = () => {
      done = true;
      clearTimeout(timer);
      forget?.();
    };
    const cancel = (reason: unknown) => {
      if (done) return;
      settle();
      to.cancel(id, String(reason));
      reject(reason instanceof McpError ? reason : new McpError(ErrorCode.RequestTimeout, String(reason)));
    };
    const forget = cancelled?.onAbort(() => cancel(cancelled.reason));
    const timer = setTimeout(() => cancel(new McpError(ErrorCode.RequestTimeout, "Request timed out", { timeout })), timeout);
    answerOf(to, options.deliver ?? to.deliver, id, method, params, options.listing === true, () => done).then(
      (answer) => {
        if (done) return;
        settle();
        if (answer.error) reject(new McpError(answer.error.code, answer.error.message, answer.error.data));
        else resolve(answer.result as Result);
      },
      (error: unknown) => {
        if (done) return;
        settle();
        reject(error);
      },
    );
  });
}

/** The member's answer to `id`, as JSON or from the event stream it opened (basic/transports "Sending Messages"). */
async function answerOf(
  to: PlainSession,
  deliver: PlainSession["deliver"],
  id: string,
  method: string,
  params: Record<string, unknown> | undefined,
  listing: boolean,
  over: () => boolean,
): Promise<Answer> {
  const message = { jsonrpc: "2.0", id, method, ...(params && { params }) };
  const response = await to.fetch(sessionPost(to.url, to, message));
  if (!response.ok) {
    const text = await response.text().catch(() => null);
    throw new StreamableHTTPError(response.status, `Error POSTing to endpoint: ${text}`);
  }
  const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/json") {
    const whole = wholeAnswerOf(response);
    const data: unknown = whole
      ? answers.message(listing ? listingKey(to, method, params) : undefined, whole, id)
      : await response.json();
    if (isPlainAnswerTo(data, id)) return data;
    // Not plainly the answer: what the SDK transport would make of it (its schema's refusal, or messages for the
    // client, after which the request waits for its answer until its timeout, as the SDK client's would).
    const messages = Array.isArray(data) ? data.map((m) => JSONRPCMessageSchema.parse(m)) : [JSONRPCMessageSchema.parse(data)];
    let answer: Answer | undefined;
    for (const message of messages) if (isAnswerTo(message, id)) answer ??= message;
    for (const message of messages) if (message !== answer) deliver(message);
    return answer ?? new Promise<never>(() => {});
  }
  if (type === "text/event-stream") return streamedAnswer(to, deliver, id, response, over);
  await response.body?.cancel();
  throw new StreamableHTTPError(-1, `Unexpected content type: ${response.headers.get("content-type")}`);
}

/** How long before a stream is resumed when the member named no `retry` (the SDK client's first reconnection delay). */
const RESUME_DELAY_MS = 1000;
/** Resumptions of one answer's stream at most, each after a stream that ended having sent an event id. */
const MAX_RESUMPTIONS = 10;
/** The longest wait a member's `retry` may ask before a resumption (a request waits no longer than its timeout anyway). */
const MAX_RESUME_DELAY_MS = 60_000;

/**
 * The answer from the member's event stream: the other messages on it go to the SDK client as they come. A stream
 * that ends before the answer after an event id is resumed (basic/transports "Resumability and Redelivery": a GET with
 * Last-Event-ID, after the member's `retry`), as the SDK client resumes its own; one that ends without an id has lost
 * the answer.
 */
async function streamedAnswer(
  to: PlainSession,
  deliver: PlainSession["deliver"],
  id: string,
  response: Response,
  over: () => boolean,
): Promise<Answer> {
  let lastEventId: string | undefined;
  let retryMs = RESUME_DELAY_MS;
  /** An event's message, checked as the SDK transport checks it (one it cannot read is dropped, and reading goes on). */
  const messageOf = (event: ServerSentEvent): unknown => {
    if (event.id !== undefined) lastEventId = event.id;
    if (event.retry !== undefined) retryMs = Math.min(event.retry, MAX_RESUME_DELAY_MS);
    if (!event.data || (event.event && event.event !== "message")) return undefined;
    try {
      const message: unknown = JSON.parse(event.data);
      return isPlainAnswerTo(message, id) ? message : JSONRPCMessageSchema.parse(message);
    } catch {
      return undefined;
    }
  };
  for (let resumed = 0; ; resumed++) {
    const events = serverSentEvents(response.body);
    for (let next = await events.next(); !next.done; next = await events.next()) {
      const message = messageOf(next.value);
      if (message === undefined) continue;
      if (!isAnswerTo(message, id)) {
        deliver(message as JSONRPCMessage);
        continue;
      }
      // What follows the answer on its stream still reaches the SDK client, as the SDK transport reads to the end.
      void (async () => {
        for await (const event of events) {
          const more = messageOf(event);
          if (more !== undefined && !isAnswerTo(more, id)) deliver(more as JSONRPCMessage);
        }
      })().catch(() => {});
      return message;
    }
    if (over()) throw new Error("The request is over");
    if (lastEventId === undefined || resumed >= MAX_RESUMPTIONS)
      throw new Error("The member's event stream ended before its answer");
    await Bun.sleep(retryMs);
    if (over()) throw new Error("The request is over");
    const headers = new Headers({ accept: "text/event-stream", "last-event-id": lastEventId });
    if (to.sessionId !== undefined) headers.set("mcp-session-id", to.sessionId);
    if (to.protocolVersion !== undefined) headers.set("mcp-protocol-version", to.protocolVersion);
    response = await to.fetch(new Request(to.url, { method: "GET", headers }));
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new StreamableHTTPError(response.status, `Failed to open SSE stream: ${response.statusText}`);
    }
  }
}
