import { alreadyRead } from "../http/read-already";

const encoder = new TextEncoder();

export type PostedSession = { sessionId?: string | undefined; protocolVersion?: string | undefined };

/**
 * Each session's request, built once and cloned for every message (Bun builds a Request's headers from a plain
 * record some 3× slower than it clones them: a member call's largest single piece, bench/RESULTS.md). Kept by the
 * session object; rebuilt when its id or version changes.
 */
const templates = new WeakMap<
  PostedSession,
  { url: string; sessionId?: string | undefined; protocolVersion?: string | undefined; request: Request }
>();

function templateOf(url: string, session: PostedSession): Request {
  const kept = templates.get(session);
  if (kept && kept.url === url && kept.sessionId === session.sessionId && kept.protocolVersion === session.protocolVersion)
    return kept.request;
  const headers = new Headers({ "content-type": "application/json", accept: "application/json, text/event-stream" });
  if (session.sessionId !== undefined) headers.set("mcp-session-id", session.sessionId);
  if (session.protocolVersion !== undefined) headers.set("mcp-protocol-version", session.protocolVersion);
  const request = new Request(url, { method: "POST", headers });
  templates.set(session, { url, sessionId: session.sessionId, protocolVersion: session.protocolVersion, request });
  return request;
}

/**
 * One JSON-RPC message POSTed on an MCP session by the service's own client code (a virtual server's member session,
 * the era bridge), as the SDK's client transport would send it: the session's id and agreed version when it has them
 * (MCP 2025-11-25 basic/transports "Session Management", "Protocol Version Header"), both media types accepted. The
 * message, read at the service's edge, goes with it as read (http/read-already.ts) rather than as a body: every part
 * that takes such a request reads it there.
 */
export function sessionPost(url: string, session: PostedSession, message: unknown): Request {
  return alreadyRead(templateOf(url, session).clone(), message, encoder.encode(JSON.stringify(message)));
}
