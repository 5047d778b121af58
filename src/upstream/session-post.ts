import { alreadyRead } from "../http/read-already";

/**
 * One JSON-RPC message POSTed on an MCP session by the service's own client code (a virtual server's member session,
 * the era bridge), as the SDK's client transport would send it: the session's id and agreed version when it has them
 * (MCP 2025-11-25 basic/transports "Session Management", "Protocol Version Header"), both media types accepted. Its
 * length is declared, so the proxy takes the body whole at once (proxy/held-bytes.ts), and the message, read at the
 * service's edge, is marked as read (http/read-already.ts).
 */
export function sessionPost(
  url: string,
  session: { sessionId?: string | undefined; protocolVersion?: string | undefined },
  message: unknown,
): Request {
  const body = new TextEncoder().encode(JSON.stringify(message));
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "content-length": String(body.byteLength),
  };
  if (session.sessionId !== undefined) headers["mcp-session-id"] = session.sessionId;
  if (session.protocolVersion !== undefined) headers["mcp-protocol-version"] = session.protocolVersion;
  return alreadyRead(new Request(url, { method: "POST", headers, body }), message);
}
