import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AppError, UpstreamFailed, UpstreamRejectedCredentials, UpstreamTimeout, invalidField } from "../http-errors/errors";
import { classifyFetchFailure, UPSTREAM_CALL_TIMEOUT_MS, type FetchLike } from "../http/fetch";
import { VERSION } from "../version";
import { discoverVersions } from "./discover";

export type HandshakeResult =
  | {
      ok: true;
      protocolVersion: string | undefined;
      serverName: string | undefined;
      /** Every revision the server speaks: those `server/discover` names (2026-07-28 on), then the one initialize agreed. */
      protocolVersions: string[];
    }
  | { ok: false; kind: "unauthorized"; status: number; wwwAuthenticate: string | null; body?: string }
  | { ok: false; kind: "redirect"; status: number; location: string | null }
  | { ok: false; kind: "unreachable" | "timeout" | "unsafe" | "http" | "protocol"; detail: string };

export type HandshakeOptions = {
  fetch: FetchLike;
  headers: Record<string, string>;
  timeoutMs?: number;
  /**
   * Ask `server/discover` too (discover.ts), for the revisions recorded at connect; not for a readiness or credential
   * check, where only "does it answer" matters (and a local gateway would start its 2026-07-28 process for nothing).
   */
  discover?: boolean;
};

/**
 * Verifies that `url` is an MCP server that accepts `headers`: the MCP lifecycle's initialize request and
 * initialized notification (https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle#initialization),
 * run by the SDK client, then the session is ended; then the 2026-07-28 revisions it speaks (discover.ts), so the proxy
 * knows which clients it must bridge (docs/behaviour.md "Protocol eras").
 */
export async function mcpHandshake(
  url: URL,
  { fetch, headers, timeoutMs = UPSTREAM_CALL_TIMEOUT_MS, discover = false }: HandshakeOptions,
): Promise<HandshakeResult> {
  let last: { status: number; wwwAuthenticate: string | null; redirect: string | null; body?: string } | undefined;
  let cause: unknown;
  const recording: FetchLike = async (input, init) => {
    try {
      const response = await fetch(input, { ...init, redirect: "manual" });
      if (!last || response.status >= 300) {
        last = {
          status: response.status,
          wwwAuthenticate: response.headers.get("www-authenticate"),
          redirect: response.headers.get("location"),
        };
        // What the server said with a refusal, for a reason to quote (the start of it: the SDK reads the rest).
        if (response.status === 401 || response.status === 403) last.body = await bodyStart(response.clone());
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
    const modern = discover ? await discoverVersions(url, fetch, headers, timeoutMs) : [];
    const legacy = transport.protocolVersion;
    return {
      ok: true,
      protocolVersion: legacy,
      serverName: client.getServerVersion()?.name,
      protocolVersions: [...new Set([...modern, ...(legacy ? [legacy] : [])])].sort().reverse(),
    };
  } catch (e) {
    const failure = cause === undefined ? undefined : classifyFetchFailure(cause, timeoutMs);
    if (failure?.kind === "unsafe") return { ok: false, kind: "unsafe", detail: failure.detail };
    if (failure?.kind === "unresolvable") return { ok: false, kind: "unreachable", detail: failure.detail };
    if (last && (last.status === 401 || last.status === 403)) {
      return {
        ok: false,
        kind: "unauthorized",
        status: last.status,
        wwwAuthenticate: last.wwwAuthenticate,
        ...(last.body && { body: last.body }),
      };
    }
    if (last && last.status >= 300 && last.status < 400)
      return { ok: false, kind: "redirect", status: last.status, location: last.redirect };
    // A server that speaks only 2026-07-28 refuses initialize (MCP 2026-07-28 basic/lifecycle: -32022 naming what it
    // supports) and answers `server/discover`: it is connected, and 2025 clients get sessions the proxy keeps.
    if (discover && !failure) {
      const modern = await discoverVersions(url, fetch, headers, timeoutMs);
      if (modern.length > 0) return { ok: true, protocolVersion: undefined, serverName: undefined, protocolVersions: modern };
    }
    if (last && last.status >= 400) return { ok: false, kind: "http", detail: `answered HTTP ${last.status} to initialize` };
    if (failure) return { ok: false, kind: failure.kind === "timeout" ? "timeout" : "unreachable", detail: failure.detail };
    if (/timed? ?out/i.test((e as Error).message)) {
      return { ok: false, kind: "timeout", detail: `no answer to initialize within ${timeoutMs / 1000} s` };
    }
    return { ok: false, kind: "protocol", detail: `did not complete the MCP initialize handshake: ${(e as Error).message}` };
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}

/** The first KiB of a response's body as text (the rest is not read). */
async function bodyStart(response: Response): Promise<string | undefined> {
  const reader = response.body?.getReader();
  if (!reader) return undefined;
  try {
    const first = await reader.read();
    return first.done ? undefined : new TextDecoder().decode(first.value.subarray(0, 1024));
  } catch {
    return undefined;
  } finally {
    void reader.cancel().catch(() => undefined);
  }
}

/** A failed handshake in a few words, for a reason that does not need connect's problem types. */
export function describeHandshake(result: Exclude<HandshakeResult, { ok: true }>): string {
  if (result.kind === "unauthorized") return `HTTP ${result.status}`;
  if (result.kind === "redirect") return `HTTP ${result.status} redirecting to ${result.location ?? "nowhere"}`;
  return result.detail;
}

export type FailureContext = {
  /** The connector was connected and stays so with the credentials it had: new ones are stored only once proven. */
  kept?: boolean;
  /** Why a URL is refused by the URL guard, if it is (for where a redirect points). */
  refused?: (url: URL) => string | undefined;
};

/** What a failed connect-time handshake leaves as `disconnect_reason`, and the problem connect answers with. */
export function handshakeFailure(
  result: Exclude<HandshakeResult, { ok: true }>,
  { kept = false, refused }: FailureContext = {},
): { reason: string; error: AppError } {
  const outcome = kept ? "; the connector keeps its current connection" : "";
  switch (result.kind) {
    case "unauthorized": {
      const reason = `The MCP server refused the supplied headers (HTTP ${result.status} ${result.status === 401 ? "Unauthorized" : "Forbidden"})`;
      return { reason, error: new UpstreamRejectedCredentials(`${reason}${kept ? outcome : "; the connector is disconnected"}`) };
    }
    case "unsafe":
      return {
        reason: `The MCP server URL is refused: ${result.detail}`,
        error: invalidField("url", `${result.detail}${outcome}`),
      };
    case "timeout":
      return {
        reason: `The MCP server did not answer: ${result.detail}`,
        error: new UpstreamTimeout(`The MCP server did not answer: ${result.detail}${outcome}`),
      };
    case "unreachable":
      return {
        reason: `Could not reach the MCP server: ${result.detail}`,
        error: new UpstreamFailed(`Could not reach the MCP server: ${result.detail}${outcome}`),
      };
    case "redirect": {
      // The handshake never follows a redirect; one to a refused address is the connector's URL's fault, a 422.
      const target = result.location && URL.canParse(result.location) ? new URL(result.location) : undefined;
      const why = target && refused?.(target);
      if (why) {
        const detail = `redirects (HTTP ${result.status}) to ${target!.href}, which is refused: ${why}`;
        return { reason: `The MCP server URL ${detail}`, error: invalidField("url", `${detail}${outcome}`) };
      }
      const detail = `answered ${result.status} redirecting to ${result.location ?? "nowhere"}: use that URL for the connector`;
      return { reason: `The MCP server ${detail}`, error: new UpstreamFailed(`The MCP server ${detail}${outcome}`) };
    }
    default:
      return {
        reason: `The MCP server ${result.detail}`,
        error: new UpstreamFailed(`The MCP server ${result.detail}${outcome}`),
      };
  }
}
