import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ResultSchema, type Progress, type Result, type ServerCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { VERSION } from "../version";

/**
 * How a virtual server reaches a member: one MCP request of the caller to the member connector's proxy URL, through
 * the proxy's own service (app.ts wires `proxy.handle`), so its admission, credentials, refresh, tool policy, pinning
 * and audit apply as they do at /api/v1/connectors/{id}/mcp. It may throw the proxy's problems (a member that is not
 * connected: 409).
 */
export type MemberExchange = (connectorId: string, request: Request) => Promise<Response>;

/** Any result, its members kept (built once: zod compiles a schema on first use, which cost more than the call). */
const ANY_RESULT = ResultSchema.passthrough();

/** Any URL: the exchange routes by connector id, never by URL. */
const memberUrl = (connectorId: string) => new URL(`http://member.invalid/api/v1/connectors/${connectorId}/mcp`);

/**
 * The one upstream session a client session holds with one member (issue 24 item 5): opened lazily, on the member's
 * first request, by the SDK client (MCP 2025-11-25 basic/lifecycle: initialize, then notifications/initialized) and
 * reused for every later request of the client session. A member that forgot it (basic/transports "Session
 * Management": 404 for an unknown Mcp-Session-Id) gets a new one, once, transparently.
 */
export function openMemberSession(exchange: MemberExchange, connectorId: string) {
  let opening: Promise<{ client: Client; transport: StreamableHTTPClientTransport }> | undefined;

  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    // No GET stream for now: server→client messages outside a call are not relayed yet (basic/transports: a server
    // without one answers 405, which the SDK client accepts).
    if (request.method === "GET") return new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
    return exchange(connectorId, request);
  };

  function open(timeout: number) {
    opening ??= (async () => {
      const transport = new StreamableHTTPClientTransport(memberUrl(connectorId), { fetch });
      const client = new Client({ name: "connector-service virtual server", version: VERSION });
      // The SDK client offers its latest version and accepts the member's choice (basic/lifecycle "Version
      // Negotiation"): the member's era is independent of the one the virtual server agreed with its client.
      try {
        await client.connect(transport, { timeout });
      } catch (error) {
        opening = undefined;
        await client.close().catch(() => {});
        throw error;
      }
      return { client, transport };
    })();
    return opening;
  }

  const forgotten = (error: unknown) => error instanceof StreamableHTTPError && error.code === 404;

  return {
    connectorId,
    /** One request on the member's session; a forgotten session is opened again and the request sent once more. */
    async request(
      method: string,
      params: Record<string, unknown> | undefined,
      options: { timeout: number; signal?: AbortSignal; onprogress?: (progress: Progress) => void },
    ): Promise<Result> {
      const send = async () => {
        const { client } = await open(options.timeout);
        const requestOptions: RequestOptions = {
          timeout: options.timeout,
          ...(options.signal && { signal: options.signal }),
          ...(options.onprogress && { onprogress: options.onprogress, resetTimeoutOnProgress: true }),
        };
        return client.request({ method, ...(params && { params }) }, ANY_RESULT, requestOptions);
      };
      try {
        return await send();
      } catch (error) {
        if (!forgotten(error)) throw error;
        const stale = opening;
        opening = undefined;
        void stale?.then(({ client }) => client.close()).catch(() => {});
        return send();
      }
    },
    /** What the member declared at initialize (its session opened first, within `timeout`). */
    async capabilities(timeout: number): Promise<ServerCapabilities | undefined> {
      const { client } = await open(timeout);
      return client.getServerCapabilities();
    },
    /** Ends the upstream session (DELETE with its Mcp-Session-Id), if it was opened. */
    async close(): Promise<void> {
      const current = opening;
      opening = undefined;
      if (!current) return;
      try {
        const { client, transport } = await current;
        await transport.terminateSession().catch(() => {});
        await client.close();
      } catch {
        // It never opened: nothing to end.
      }
    },
  };
}
export type MemberSession = ReturnType<typeof openMemberSession>;
