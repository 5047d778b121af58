import { errorOf, INTERNAL_ERROR, jsonAnswer, resultOf, RpcError, SSE_HEADERS, sseEvent, type RequestId } from "./jsonrpc";
import { pushStream, type PushStream } from "../http/push-stream";
import type { Channel } from "./relay";

/**
 * The answer to a routed request (MCP 2025-11-25 basic/transports "Sending Messages to the Server"): JSON when nothing
 * related to the request comes before its response, else an event stream — opened by the first such message (a
 * progress notification, a member's elicitation, sampling or roots request), then the response — when the client
 * accepts one (`streams`). `run` is given the channel those messages go on; a client that does not take event streams
 * gets a channel that carries nothing.
 */
export function answerCall(
  id: RequestId,
  streams: boolean,
  cancelled: { readonly aborted: boolean },
  run: (channel: Channel) => Promise<unknown>,
): Promise<Response> {
  let stream: PushStream | undefined;
  let respond!: (response: Response) => void;
  const response = new Promise<Response>((resolve) => (respond = resolve));
  // A client that went away (or stopped reading: http/push-stream.ts) ended the stream: what is left of the call is
  // not written anywhere.
  const channel: Channel = (message) => {
    if (!streams) return false;
    if (!stream) {
      stream = pushStream(() => undefined);
      respond(new Response(stream.body, { headers: SSE_HEADERS }));
    }
    return stream.push(sseEvent(message));
  };
  const answer = (message: unknown) => {
    if (!stream) return respond(jsonAnswer(message));
    // basic/utilities/cancellation: a cancelled request gets no response; its stream just ends.
    if (!cancelled.aborted) stream.push(sseEvent(message));
    stream.close();
  };
  void run(channel).then(
    (result) => answer(resultOf(id, result)),
    (error: unknown) => answer(errorOf(id, error instanceof RpcError ? error : new RpcError(INTERNAL_ERROR, String(error)))),
  );
  return response;
}
