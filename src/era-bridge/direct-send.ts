import type { TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { GATEWAY_ERROR } from "../gateway/json-rpc";
import { serverSentEvents } from "../http/server-sent-events";
import { jsonRpcAnswer } from "../upstream/answered-here";
import { sessionPost } from "../upstream/session-post";
import type { SessionNow } from "./reopening-transport";

type Id = string | number;
/** Sends one request through the client transport instead (its session handling, resumption, its errors). */
export type ViaTransport = (options?: TransportSendOptions) => Promise<void>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The era bridge's requests to the server, sent on the transport's session but without the SDK's client transport
 * (its per-request headers, schema checks and async context were most of the bridge's cost over the plain proxy:
 * bench/RESULTS.md "2026-07-28 clients"): one POST through the proxy (`hop`), and what comes back about the request —
 * its answer, its progress, the server's requests during it, on its event stream (MCP 2025-11-25 basic/transports
 * "Sending Messages to the Server") — delivered as about that request. The transport keeps what is rare: a session
 * not open yet or being opened again, a session the server forgot (404: it opens a new one and sends again), and a
 * stream that ended after an event id but before the answer (it resumes with `Last-Event-ID`, basic/transports
 * "Resumability and Redelivery"). An HTTP error is thrown with the wording of the SDK's transport.
 */
export function createDirectSend(
  url: string,
  hop: (request: Request) => Promise<Response>,
  session: () => SessionNow | undefined,
) {
  return async (message: JSONRPCMessage, deliver: (reply: JSONRPCMessage) => void, viaTransport: ViaTransport) => {
    const now = session();
    if (!now) return viaTransport();
    const response = await hop(sessionPost(url, now, message));
    if (response.status === 404) {
      await response.body?.cancel();
      return viaTransport();
    }
    if (!response.ok) throw new Error(`Error POSTing to endpoint: ${await response.text().catch(() => "")}`);
    const type = response.headers.get("content-type") ?? "";
    const id = (message as { id?: Id }).id;
    if (id === undefined || response.status === 202) return void (await response.body?.cancel());
    if (type.startsWith("application/json")) {
      const answer = jsonRpcAnswer(await response.text());
      if (!answer) throw new Error("The MCP server's answer is not a JSON-RPC answer");
      return deliver(answer);
    }
    if (!type.startsWith("text/event-stream") || !response.body) {
      await response.body?.cancel();
      throw new Error(`Unexpected content type: ${type}`);
    }
    const { answered, lastEventId } = await readEvents(response.body, id, deliver);
    if (answered) return;
    if (lastEventId !== undefined) return viaTransport({ resumptionToken: lastEventId });
    deliver({
      jsonrpc: "2.0",
      id,
      error: { code: GATEWAY_ERROR, message: "The MCP server ended the request's event stream without answering it" },
    });
  };
}

/**
 * Delivers each JSON-RPC message of an event stream (HTML §9.2.6; MCP basic/transports: each `message` event's data
 * is one message); whether the answer to `id` came, and the last event id seen (what a resumption starts after).
 */
async function readEvents(body: ReadableStream<Uint8Array>, id: Id, deliver: (reply: JSONRPCMessage) => void) {
  let answered = false;
  let lastEventId: string | undefined;
  try {
    for await (const event of serverSentEvents(body)) {
      // An empty id resets the last one (HTML §9.2.6): nothing to resume after, as the SDK's transport reads it.
      if (event.id !== undefined) lastEventId = event.id || undefined;
      if (!event.data || (event.event !== undefined && event.event !== "message")) continue;
      let message: unknown;
      try {
        message = JSON.parse(event.data);
      } catch {
        continue;
      }
      if (!isObject(message) || message.jsonrpc !== "2.0") continue;
      if (message.id === id && message.method === undefined) answered = true;
      try {
        deliver(message as JSONRPCMessage);
      } catch {
        // One message the gateway could not take (a malformed notification): the rest of the stream still counts,
        // as the SDK's transport reads on past a message it refuses.
      }
    }
  } catch {
    // The stream broke off: what came is delivered, and the caller resumes it or answers for it. What is left of it
    // is let go (the proxy holds the caller's place until it ends).
    await body.cancel().catch(() => undefined);
  }
  return { answered, lastEventId };
}
