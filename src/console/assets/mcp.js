// A small MCP client over Streamable HTTP, spoken by hand with fetch, for the console's "Try it": the requests go to
// the connector's proxy URL with the console session (cookie + X-CSRF-Token, same origin), so they pass the same
// admission, tool policy and audit as any MCP client's.
// Spec: MCP 2025-11-25, Base Protocol › Transports › Streamable HTTP ("transports §…" below) and › Lifecycle
// ("lifecycle §…"), at modelcontextprotocol.io/specification/2025-11-25 (named, not linked: the console's files hold
// no outside URL).
import { currentCsrfToken } from "./api.js";

/** The newest revision this client speaks; the server may answer with an older one it supports (lifecycle §Version Negotiation). */
export const PROTOCOL_VERSION = "2025-11-25";
const CLIENT_INFO = { name: "connector-service console", version: "1" };

/** A JSON-RPC error the server answered (code, message, data), or a failure of the exchange itself (code null). */
export class McpError extends Error {
  constructor(message, { code = null, data, status } = {}) {
    super(message);
    this.code = code;
    this.data = data;
    this.status = status;
  }
}

/** The text of a problem (RFC 9457) or a JSON-RPC error the service or server answered with, for people. */
async function failure(response) {
  const text = await response.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: said by status below.
  }
  if (body && body.error && typeof body.error.message === "string")
    return new McpError(body.error.message, { code: body.error.code, data: body.error.data, status: response.status });
  const detail = body && (body.detail || body.title);
  return new McpError(detail || `The proxy answered ${response.status} ${response.statusText}`.trim(), {
    status: response.status,
  });
}

/**
 * The messages of a `text/event-stream` body as they arrive (HTML Living Standard §9.2.6, Interpreting an event stream):
 * `data:` lines joined by newlines, dispatched at a blank line; comments, `id:` and `retry:` are not needed here.
 */
async function* events(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (data.length) yield data.join("\n");
          data = [];
        } else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
    }
    if (data.length) yield data.join("\n");
  } finally {
    reader.releaseLock();
  }
}

/**
 * One MCP session with a connector, through its proxy URL. `open()` runs the initialization (initialize, then
 * notifications/initialized); `request()` sends one request and resolves to its result; `close()` ends the session.
 */
export class McpSession {
  constructor(url) {
    this.url = url;
    this.sessionId = null;
    this.protocolVersion = null;
    this.serverInfo = null;
    this.capabilities = {};
    this.nextId = 1;
  }

  headers() {
    const headers = {
      // Transports §Sending Messages to the Server: the client accepts both a JSON answer and an event stream.
      accept: "application/json, text/event-stream",
      "content-type": "application/json",
    };
    // The session cookie goes by itself (same origin); the proxy takes it only with the session's CSRF token.
    const csrf = currentCsrfToken();
    if (csrf) headers["x-csrf-token"] = csrf;
    // Transports §Session Management: every request after initialize carries the session the server assigned.
    if (this.sessionId) headers["mcp-session-id"] = this.sessionId;
    // Transports §Protocol Version Header: the negotiated version on every request after initialization.
    if (this.protocolVersion) headers["mcp-protocol-version"] = this.protocolVersion;
    return headers;
  }

  async post(message, signal) {
    let response;
    try {
      response = await fetch(this.url, {
        method: "POST",
        headers: this.headers(),
        body: JSON.stringify(message),
        credentials: "same-origin",
        cache: "no-store",
        redirect: "error",
        signal,
      });
    } catch (e) {
      if (e && e.name === "AbortError") throw new McpError("Cancelled.");
      throw new McpError("The service could not be reached. Check the connection and try again.");
    }
    return response;
  }

  /** Initialization (lifecycle §Initialization): initialize, then notifications/initialized. */
  async open() {
    const result = await this.request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      // No sampling, roots or elicitation: the console cannot answer a server's requests.
      capabilities: {},
      clientInfo: CLIENT_INFO,
    });
    this.protocolVersion = result.protocolVersion;
    this.serverInfo = result.serverInfo ?? null;
    this.capabilities = result.capabilities ?? {};
    this.instructions = result.instructions ?? null;
    await this.notify("notifications/initialized");
    return result;
  }

  /** A notification: the server answers 202 Accepted with no body (transports §Sending Messages to the Server). */
  async notify(method, params) {
    const response = await this.post({ jsonrpc: "2.0", method, ...(params && { params }) });
    if (!response.ok) throw await failure(response);
    await response.body?.cancel();
  }

  /**
   * One request; resolves to its result or throws an McpError. The answer is one JSON object, or an event stream
   * that may first carry notifications (progress: `onProgress(params)`, anything else: `onMessage(message)`) and
   * requests of the server, which this client declines, and ends with the response. `onId(id)` learns the request's
   * id (to cancel it).
   */
  async request(method, params, { onProgress, onMessage, signal, onId } = {}) {
    const id = this.nextId++;
    if (onId) onId(id);
    const response = await this.post({ jsonrpc: "2.0", id, method, ...(params !== undefined && { params }) }, signal);
    if (method === "initialize") this.sessionId = response.headers.get("mcp-session-id");
    // Transports §Session Management: a 404 for a request with a session means the session ended; start a new one.
    if (response.status === 404 && this.sessionId && method !== "initialize") {
      await response.body?.cancel();
      this.sessionId = null;
      this.protocolVersion = null;
      throw new McpError("The MCP session ended: try again (a new one is started).", { status: 404, code: "session-ended" });
    }
    if (!response.ok) throw await failure(response);
    const type = (response.headers.get("content-type") || "").toLowerCase();
    if (type.startsWith("application/json")) return this.answer(await response.json(), id);
    if (!type.startsWith("text/event-stream") || !response.body)
      throw new McpError(`The proxy answered with ${type || "no content type"}, not JSON or an event stream.`);
    try {
      for await (const data of events(response.body)) {
        let message;
        try {
          message = JSON.parse(data);
        } catch {
          continue;
        }
        if (message.id === id && ("result" in message || "error" in message)) return this.answer(message, id);
        if (message.method === "notifications/progress" && onProgress) onProgress(message.params ?? {});
        else if (message.method && message.id !== undefined) this.decline(message);
        else if (onMessage) onMessage(message);
      }
    } catch (e) {
      if (e instanceof McpError) throw e;
      if (e && e.name === "AbortError") throw new McpError("Cancelled.");
      throw new McpError("The event stream broke off before the answer came.");
    }
    throw new McpError("The event stream ended before the answer came.");
  }

  answer(message, id) {
    if (Array.isArray(message)) message = message.find((m) => m && m.id === id) ?? {};
    if (message.error)
      throw new McpError(message.error.message || "The server answered with an error", {
        code: message.error.code,
        data: message.error.data,
      });
    return message.result;
  }

  /** A request of the server's (sampling, elicitation, roots): declined, as this client declared no such capability. */
  decline(message) {
    this.post({
      jsonrpc: "2.0",
      id: message.id,
      error: { code: -32601, message: `The console does not support ${message.method}` },
    })
      .then((r) => r.body?.cancel())
      .catch(() => undefined);
  }

  /**
   * Every page of a listing (tools/list, prompts/list, resources/list), following `nextCursor`
   * (MCP 2025-11-25, Server Features › Utilities › Pagination); at most `maxPages`.
   */
  async list(method, key, maxPages = 20) {
    const items = [];
    let cursor;
    for (let page = 0; page < maxPages; page++) {
      const result = await this.request(method, cursor === undefined ? {} : { cursor });
      items.push(...(Array.isArray(result[key]) ? result[key] : []));
      cursor = result.nextCursor;
      if (typeof cursor !== "string" || cursor === "") break;
    }
    return items;
  }

  /** Tells the server a request is no longer wanted (MCP 2025-11-25, Base Protocol › Utilities › Cancellation). */
  cancel(requestId, reason) {
    return this.notify("notifications/cancelled", { requestId, reason }).catch(() => undefined);
  }

  /** Transports §Session Management: DELETE ends the session (a 405 means the server does not allow it: fine). */
  async close() {
    if (!this.sessionId) return;
    const headers = this.headers();
    delete headers["content-type"];
    this.sessionId = null;
    try {
      const response = await fetch(this.url, { method: "DELETE", headers, credentials: "same-origin", cache: "no-store" });
      await response.body?.cancel();
    } catch {
      // Gone already: nothing to end.
    }
  }
}
