import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { ServerToolList, ToolDefinition } from "../connectors/model";
import { AppError, UpstreamFailed, UpstreamTimeout } from "../http-errors/errors";
import { UPSTREAM_CALL_TIMEOUT_MS } from "../http/fetch";
import type { Principal } from "../users/model";
import { VERSION } from "../version";
import { seenTool } from "./tool-pins";

/** One MCP request of `caller` through the proxy's own service, without the connector's tool policy (service.ts). */
export type UnfilteredExchange = (caller: Principal, connectorId: string, request: Request) => Promise<Response>;

/** At most this many pages: a server whose cursors never end is not followed for ever. */
const MAX_PAGES = 50;

/** The proxy URL's path; the host is never reached (the exchange is in-process). */
const proxyUrl = (id: string) => new URL(`http://proxy.invalid/api/v1/connectors/${encodeURIComponent(id)}/mcp`);

/**
 * The server's tools as it lists them, for the owner editing the tool policy (docs/behaviour.md "Tool policy"): the
 * console must show the tools the policy hides too, or a denied tool could never be allowed again. It is one MCP
 * session through the proxy's own service, so the connector's state, credentials, refresh and audit apply as at the
 * proxy URL; only the policy is left out (the owner may remove it anyway, so nothing is revealed they could not see).
 */
export function createServerTools(exchange: UnfilteredExchange) {
  return async function listServerTools(caller: Principal, id: string): Promise<ServerToolList> {
    const fetch = async (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      // The SDK opens a GET stream for the server's own messages after initialize; a listing needs none, so it gets
      // the 405 a server without one answers (transports §Listening for Messages), and the server is not held open.
      if (request.method === "GET") return new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
      return exchange(caller, id, request);
    };
    const client = new Client({ name: "connector-service tool policy", version: VERSION });
    const transport = new StreamableHTTPClientTransport(proxyUrl(id), { fetch });
    const options = { timeout: UPSTREAM_CALL_TIMEOUT_MS };
    try {
      await client.connect(transport, options);
      const items: ToolDefinition[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const result = await client.listTools(cursor === undefined ? {} : { cursor }, options);
        items.push(...result.tools.map((tool) => seenTool(tool).definition));
        cursor = result.nextCursor;
        if (!cursor) break;
      }
      return { items };
    } catch (e) {
      throw asProblem(e);
    } finally {
      // Ends the session at the server (a DELETE), as any client that is done should (transports §Session Management).
      await transport.terminateSession().catch(() => {});
      await client.close().catch(() => {});
    }
  };
}

/** The proxy's own problems (not connected: 409) as they are; the server's failures as a 502 that says what it said. */
function asProblem(e: unknown): Error {
  if (e instanceof AppError) return e;
  if (e instanceof McpError && e.code === ErrorCode.RequestTimeout)
    return new UpstreamTimeout(`The MCP server did not answer tools/list within ${UPSTREAM_CALL_TIMEOUT_MS / 1000} s`);
  if (e instanceof McpError) return new UpstreamFailed(`The MCP server answered tools/list with an error: ${e.message}`);
  if (e instanceof StreamableHTTPError) return new UpstreamFailed(`The MCP server's answer could not be used: ${e.message}`);
  return new UpstreamFailed(`The MCP server's tools could not be listed: ${(e as Error).message}`);
}
