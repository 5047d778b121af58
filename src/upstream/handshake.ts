import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "../app";
import { UnsafeUrl, UnresolvableHost } from "../security/url-guard";
import { VERSION } from "../version";
import { describeFetchError } from "../proxy/forward";

export type HandshakeResult =
  | { ok: true; protocolVersion: string | undefined; serverName: string | undefined }
  | { ok: false; kind: "unauthorized"; status: number; wwwAuthenticate: string | null }
  | { ok: false; kind: "unreachable" | "timeout" | "unsafe" | "http" | "protocol"; detail: string };

export type HandshakeOptions = { fetch: FetchLike; headers: Record<string, string>; timeoutMs: number };

/**
 * Verifies that `url` is an MCP server that accepts `headers`: the MCP lifecycle's initialize request and
 * initialized notification (MCP 2025-11-25 basic/lifecycle), run by the SDK client, then the session is ended.
 */
export async function mcpHandshake(url: URL, { fetch, headers, timeoutMs }: HandshakeOptions): Promise<HandshakeResult> {
  let last: { status: number; wwwAuthenticate: string | null; redirect: string | null } | undefined;
  let cause: unknown;
  const recording: FetchLike = async (input, init) => {
    try {
      const response = await fetch(input, { ...init, redirect: "manual" });
      if (!last || response.status >= 300) {
        last = { status: response.status, wwwAuthenticate: response.headers.get("www-authenticate"), redirect: response.headers.get("location") };
      }
      return response;
    } catch (e) {
      cause ??= e;
      throw e;
    }
  };
  const transport = new StreamableHTTPClientTransport(url, { fetch: recording, requestInit: { headers } });
  const client = new Client({ name: "connector-service", version: VERSION });
  try {
    await client.connect(transport, { timeout: timeoutMs });
    return { ok: true, protocolVersion: transport.protocolVersion, serverName: client.getServerVersion()?.name };
  } catch (e) {
    if (cause instanceof UnsafeUrl || cause instanceof UnresolvableHost) {
      return { ok: false, kind: cause instanceof UnsafeUrl ? "unsafe" : "unreachable", detail: cause.message };
    }
    if (last && (last.status === 401 || last.status === 403)) {
      return { ok: false, kind: "unauthorized", status: last.status, wwwAuthenticate: last.wwwAuthenticate };
    }
    if (last && last.status >= 300 && last.status < 400) {
      return { ok: false, kind: "http", detail: `answered ${last.status} redirecting to ${last.redirect ?? "nowhere"}: use that URL for the connector` };
    }
    if (last && last.status >= 400) return { ok: false, kind: "http", detail: `answered HTTP ${last.status} to initialize` };
    if (cause) return { ok: false, kind: "unreachable", detail: describeFetchError(cause) };
    if (/timed? ?out/i.test((e as Error).message)) {
      return { ok: false, kind: "timeout", detail: `no answer to initialize within ${timeoutMs / 1000} s` };
    }
    return { ok: false, kind: "protocol", detail: `did not complete the MCP initialize handshake: ${(e as Error).message}` };
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}
