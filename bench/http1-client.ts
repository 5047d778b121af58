import type { Socket } from "bun";
import type { FetchLike } from "../src/http/fetch";

/**
 * A candidate upstream client for the relays, measured against Bun's fetch and not adopted (bench/RESULTS.md,
 * "Upstream HTTP client"): an HTTP/1.1 client ([RFC 9112](https://www.rfc-editor.org/rfc/rfc9112)) on Bun.connect with
 * a pool of keep-alive connections per origin. In a bare forwarder it costs less CPU per request than fetch; inside
 * the service it made the proxy slower, because fetch does its network work on a thread of its own and this client
 * does it on the one thread that also serves every request. Kept, with its differential test
 * (test/bench/http1-client.test.ts), so the comparison can be run again on a later Bun.
 *
 * What it does: a small answer of declared length is read whole and handed over as one buffer; any other body
 * (chunked, an event stream, one that ends with the connection, a large one) streams, with backpressure. Never follows
 * redirects, never decompresses. A request whose body is a stream goes to `fallback` (fetch).
 */

export type Http1Options = {
  /** Used for what this client does not do: streamed request bodies, other URL schemes, Request objects. */
  fallback: FetchLike;
  /** Extra trust for https upstreams (tests: a local CA); the system's roots otherwise. */
  ca?: string;
  /** Idle connections kept per origin. */
  maxIdle?: number;
  /** An idle connection is closed after this long: below the 5 s keep-alive timeout of common servers (Node's). */
  idleMs?: number;
};

/** Answers of declared length up to this are read whole before they are handed over. */
const WHOLE_BODY_BYTES = 1024 * 1024;
const MAX_HEAD_BYTES = 64 * 1024;
const HEAD_END = Buffer.from("\r\n\r\n");
const CRLF = Buffer.from("\r\n");
/** Headers this client writes itself (framing and the connection's own). */
const OWN_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "te",
  "upgrade",
  "expect",
]);

const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

type Framing = "none" | "length" | "chunked" | "close";
type Head = { status: number; statusText: string; headers: Headers; framing: Framing; length: number; keepAlive: boolean };

type Exchange = {
  request: Uint8Array;
  head: boolean; // a HEAD request: its answer has no body
  /** GET, HEAD, OPTIONS, PUT, DELETE (RFC 9110 §9.2.2): may be sent again. */
  idempotent: boolean;
  reused: boolean;
  /** Some of the answer arrived: a request that may have been acted on is never sent again. */
  answered: boolean;
  /** Settled (a Response given, or failed): later events only concern its body. */
  given: boolean;
  resolve(response: Response): void;
  reject(error: unknown): void;
  body?: ReadableStreamDefaultController<Uint8Array>;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** The connection it is on, once it has one. */
  conn?: Connection;
};

type Pool = { hostname: string; port: number; tls: boolean; idle: Connection[] };

type Connection = {
  pool: Pool;
  socket: Socket<Connection> | undefined;
  closed: boolean;
  exchange: Exchange | undefined;
  unsent: Uint8Array | undefined;
  unread: Buffer | undefined;
  head: Head | undefined;
  /** Bytes of the body still to come (length framing), or where the chunk parser is. */
  remaining: number;
  chunk: number | "size" | "crlf" | "trailer";
  parts: Uint8Array[];
  idleTimer: ReturnType<typeof setTimeout> | undefined;
};

class UpstreamClosed extends Error {
  readonly code = "ECONNRESET";
}

export function createHttp1Fetch({ fallback, ca, maxIdle = 64, idleMs = 4_000 }: Http1Options): FetchLike & { close(): void } {
  const pools = new Map<string, Pool>();

  const handlers: Bun.SocketHandler<Connection> = {
    data(socket, data) {
      const conn = socket.data;
      if (!conn.exchange) return close(conn); // bytes nobody asked for: the connection cannot be trusted
      conn.exchange.answered = true;
      conn.unread = conn.unread && conn.unread.byteLength > 0 ? Buffer.concat([conn.unread, data]) : Buffer.from(data);
      try {
        read(conn);
      } catch (e) {
        fail(conn, e);
      }
    },
    drain: (socket) => write(socket.data),
    close(socket, error) {
      const conn = socket.data;
      conn.closed = true;
      forget(conn);
      const exchange = conn.exchange;
      if (!exchange) return;
      // RFC 9112 §6.3 (8): without a length or chunked coding, the body ends when the connection closes.
      if (conn.head?.framing === "close") return finish(conn);
      // RFC 9112 §9.3.1.1: a reused connection the server closed before answering (its idle timeout raced the request)
      // — an idempotent request goes once more on a new connection; any other fails, as with fetch, since the server
      // may have acted on it.
      if (exchange.reused && exchange.idempotent && !exchange.answered && !exchange.given) {
        conn.exchange = undefined;
        exchange.reused = false;
        return void send(conn.pool, exchange, false);
      }
      fail(conn, error ?? new UpstreamClosed("the upstream closed the connection before its answer was complete"));
    },
    error: (socket, error) => fail(socket.data, error),
    // An https upstream's certificate must verify against the roots (and `ca`), as fetch requires.
    handshake(socket, success, authorizationError) {
      if (success && !authorizationError) return;
      const code = (authorizationError as { code?: string } | null)?.code ?? "ERR_TLS_HANDSHAKE";
      fail(socket.data, Object.assign(new Error(`TLS failed: ${authorizationError?.message ?? "handshake failed"}`), { code }));
    },
  };

  function forget(conn: Connection) {
    clearTimeout(conn.idleTimer);
    const at = conn.pool.idle.indexOf(conn);
    if (at >= 0) conn.pool.idle.splice(at, 1);
  }

  function close(conn: Connection) {
    conn.closed = true;
    forget(conn);
    conn.socket?.end();
  }

  function settle(exchange: Exchange) {
    exchange.given = true;
    if (exchange.onAbort) exchange.signal?.removeEventListener("abort", exchange.onAbort);
  }

  /** The exchange failed (the network, the upstream's bytes, an abort): its connection is closed. */
  function fail(conn: Connection, error: unknown) {
    const exchange = conn.exchange;
    conn.exchange = undefined;
    close(conn);
    if (!exchange) return;
    if (exchange.body) {
      try {
        exchange.body.error(error);
      } catch {
        // the reader is gone already
      }
    }
    if (!exchange.given) exchange.reject(error);
    settle(exchange);
  }

  function write(conn: Connection) {
    const bytes = conn.unsent;
    if (!bytes || !conn.socket) return;
    const written = conn.socket.write(bytes);
    conn.unsent = written >= 0 && written < bytes.byteLength ? bytes.subarray(written) : undefined;
  }

  function respond(exchange: Exchange, head: Head, body: BodyInit | null) {
    let response: Response;
    try {
      response = new Response(body, { status: head.status, statusText: head.statusText, headers: head.headers });
    } catch (e) {
      return exchange.reject(e);
    }
    exchange.resolve(response);
  }

  /** The answer is complete: the exchange is over, the connection kept for the next one when it can be. */
  function finish(conn: Connection) {
    const exchange = conn.exchange!;
    const head = conn.head!;
    const reusable = head.keepAlive && !conn.closed && (conn.unread === undefined || conn.unread.byteLength === 0);
    conn.exchange = undefined;
    conn.head = undefined;
    conn.unread = undefined;
    const parts = conn.parts;
    conn.parts = [];
    if (exchange.body) {
      try {
        exchange.body.close();
      } catch {
        // the reader cancelled meanwhile
      }
    } else if (!exchange.given) {
      respond(
        exchange,
        head,
        head.framing === "none" ? null : ((parts.length === 1 ? parts[0]! : Buffer.concat(parts)) as Uint8Array<ArrayBuffer>),
      );
    }
    settle(exchange);
    if (reusable && conn.pool.idle.length < maxIdle) {
      conn.socket?.resume(); // a streamed body may have left it paused
      conn.pool.idle.push(conn);
      conn.idleTimer = setTimeout(() => close(conn), idleMs);
      conn.idleTimer.unref?.();
    } else close(conn);
  }

  /** Body bytes: kept for a whole answer, or passed to the stream (reading pauses while its reader is behind). */
  function deliver(conn: Connection, bytes: Uint8Array) {
    const body = conn.exchange!.body;
    if (!body) return void conn.parts.push(bytes);
    body.enqueue(bytes);
    if ((body.desiredSize ?? 1) <= 0) conn.socket?.pause();
  }

  /** A streamed body's Response, given as soon as the head is there (as fetch does). */
  function stream(conn: Connection) {
    const exchange = conn.exchange!;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => void (exchange.body = controller),
      pull: () => void conn.socket?.resume(),
      cancel: () => {
        // The reader went away mid-body: the connection cannot carry another answer.
        if (conn.exchange === exchange) {
          conn.exchange = undefined;
          close(conn);
        }
        settle(exchange);
      },
    });
    respond(exchange, conn.head!, body);
    exchange.given = true;
  }

  /** Parses what has arrived (RFC 9112 §2–§7). */
  function read(conn: Connection) {
    for (;;) {
      const unread = conn.unread;
      if (!unread || unread.byteLength === 0 || !conn.exchange) return;
      if (!conn.head) {
        const end = unread.indexOf(HEAD_END);
        if (end < 0) {
          if (unread.byteLength > MAX_HEAD_BYTES) throw new Error("the upstream's answer head is too large");
          return;
        }
        const head = parseHead(unread.toString("latin1", 0, end), conn.exchange.head);
        conn.unread = unread.subarray(end + 4);
        if (head.status < 200) continue; // RFC 9110 §15.2: interim answers come before the final one
        conn.head = head;
        conn.parts = [];
        conn.chunk = "size";
        conn.remaining = head.length;
        if (head.framing === "none" || (head.framing === "length" && head.length === 0)) return finish(conn);
        if (head.framing !== "length" || head.length > WHOLE_BODY_BYTES) stream(conn);
        continue;
      }
      const framing = conn.head.framing;
      if (framing === "close") {
        conn.unread = undefined;
        deliver(conn, unread);
        return;
      }
      if (framing === "length") {
        const take = Math.min(conn.remaining, unread.byteLength);
        deliver(conn, unread.subarray(0, take));
        conn.unread = unread.subarray(take);
        conn.remaining -= take;
        if (conn.remaining === 0) return finish(conn);
        return;
      }
      // RFC 9112 §7.1: chunk-size [ chunk-ext ] CRLF chunk-data CRLF … last-chunk trailer-section CRLF.
      if (conn.chunk === "size" || conn.chunk === "trailer") {
        const eol = unread.indexOf(CRLF);
        if (eol < 0) {
          if (unread.byteLength > MAX_HEAD_BYTES) throw new Error("a chunk line of the upstream's answer is too long");
          return;
        }
        const line = unread.toString("latin1", 0, eol);
        conn.unread = unread.subarray(eol + 2);
        if (conn.chunk === "trailer") {
          if (line === "") return finish(conn);
          continue;
        }
        const hex = line.split(";", 1)[0]!.trim();
        if (!/^[0-9a-fA-F]{1,8}$/.test(hex))
          throw new Error(`the upstream sent a bad chunk size: ${JSON.stringify(line.slice(0, 40))}`);
        const size = Number.parseInt(hex, 16);
        conn.chunk = size === 0 ? "trailer" : size;
        continue;
      }
      if (conn.chunk === "crlf") {
        if (unread.byteLength < 2) return;
        if (unread[0] !== 13 || unread[1] !== 10) throw new Error("the upstream's chunk data was not followed by CRLF");
        conn.unread = unread.subarray(2);
        conn.chunk = "size";
        continue;
      }
      const take = Math.min(conn.chunk, unread.byteLength);
      deliver(conn, unread.subarray(0, take));
      conn.unread = unread.subarray(take);
      conn.chunk = conn.chunk === take ? "crlf" : conn.chunk - take;
    }
  }

  async function send(pool: Pool, exchange: Exchange, mayReuse = true): Promise<void> {
    let conn: Connection | undefined;
    while (mayReuse && (conn = pool.idle.pop()) !== undefined && conn.closed);
    if (conn && !conn.closed) {
      clearTimeout(conn.idleTimer);
      exchange.reused = true;
    } else {
      conn = {
        pool,
        socket: undefined,
        closed: false,
        exchange: undefined,
        unsent: undefined,
        unread: undefined,
        head: undefined,
        remaining: 0,
        chunk: "size",
        parts: [],
        idleTimer: undefined,
      };
      try {
        conn.socket = await Bun.connect<Connection>({
          hostname: pool.hostname,
          port: pool.port,
          data: conn,
          socket: handlers,
          ...(pool.tls && { tls: { serverName: pool.hostname, ...(ca !== undefined && { ca }) } }),
        });
      } catch (e) {
        if (!exchange.given) exchange.reject(e);
        return settle(exchange);
      }
      conn.socket.setNoDelay(true);
      if (exchange.given) return close(conn); // aborted while connecting
    }
    conn.exchange = exchange;
    exchange.conn = conn;
    conn.unsent = exchange.request;
    write(conn);
  }

  const client: FetchLike = (input, init = {}) => {
    const body = init.body;
    const bytes =
      body === undefined || body === null
        ? undefined
        : body instanceof Uint8Array
          ? body
          : typeof body === "string"
            ? Buffer.from(body)
            : undefined;
    const url = input instanceof URL ? input : typeof input === "string" ? new URL(input) : undefined;
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || (body != null && bytes === undefined))
      return fallback(input, init);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const method = (init.method ?? "GET").toUpperCase();
    let head = `${method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
    let agent = false;
    // Headers validates names and values (no CR or LF can get into the request); the relays pass one already.
    (init.headers instanceof Headers ? init.headers : new Headers(init.headers)).forEach((value, name) => {
      if (OWN_HEADERS.has(name)) return;
      if (name === "user-agent") agent = true;
      head += `${name}: ${value}\r\n`;
    });
    if (!agent) head += "user-agent: connector-service\r\n";
    if (bytes || method === "POST" || method === "PUT" || method === "PATCH")
      head += `content-length: ${bytes?.byteLength ?? 0}\r\n`;
    head += "\r\n";
    const request = bytes ? Buffer.concat([Buffer.from(head, "latin1"), bytes]) : Buffer.from(head, "latin1");
    const key = `${url.protocol}//${url.host}`;
    let pool = pools.get(key);
    if (!pool) {
      pool = {
        hostname: url.hostname.replace(/^\[|\]$/g, ""),
        port: Number(url.port || (url.protocol === "https:" ? 443 : 80)),
        tls: url.protocol === "https:",
        idle: [],
      };
      pools.set(key, pool);
    }
    return new Promise<Response>((resolve, reject) => {
      const exchange: Exchange = {
        request,
        head: method === "HEAD",
        idempotent: IDEMPOTENT.has(method),
        reused: false,
        answered: false,
        given: false,
        resolve,
        reject,
      };
      if (signal) {
        exchange.signal = signal;
        // An abort ends the exchange wherever it is: connecting, waiting for the answer, or streaming its body.
        exchange.onAbort = () => {
          if (exchange.conn?.exchange === exchange) return fail(exchange.conn, signal.reason);
          if (!exchange.given) reject(signal.reason);
          settle(exchange);
        };
        signal.addEventListener("abort", exchange.onAbort, { once: true });
      }
      void send(pool, exchange);
    });
  };

  return Object.assign(client, {
    /** Closes every idle connection (shutdown, tests). */
    close() {
      for (const pool of pools.values()) for (const conn of [...pool.idle]) close(conn);
    },
  });
}

/** The status line and header section (RFC 9112 §4, §5), and how the body is framed (§6.3). */
function parseHead(text: string, headRequest: boolean): Head {
  const lines = text.split("\r\n");
  const status = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0]!);
  if (!status) throw new Error(`the upstream sent a bad status line: ${JSON.stringify(lines[0]!.slice(0, 40))}`);
  const code = Number(status[2]);
  const fields: [string, string][] = [];
  let length: string | undefined;
  let coding: string | undefined;
  let connection = "";
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    // §5.1: no whitespace between a field name and its colon; obsolete line folding is refused (§5.2).
    if (colon <= 0 || line[colon - 1] === " " || line[0] === " " || line[0] === "\t")
      throw new Error(`the upstream sent a bad header line: ${JSON.stringify(line.slice(0, 40))}`);
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    fields.push([name, value]);
    if (name === "content-length") {
      // §6.3 (5): differing lengths cannot be recovered from.
      if (length !== undefined && length !== value) throw new Error("the upstream sent conflicting Content-Length headers");
      length = value;
    } else if (name === "transfer-encoding") coding = coding === undefined ? value : `${coding}, ${value}`;
    else if (name === "connection") connection += `,${value.toLowerCase()}`;
  }
  const headers = new Headers(fields); // one call; it validates every name and value
  const keepAlive = status[1] === "1" && !/(^|,)\s*close\s*(,|$)/.test(connection);
  const base = { status: code, statusText: status[3] ?? "", headers, length: 0, keepAlive };
  // §6.3: no body after HEAD, 1xx, 204, 304; chunked wins over a length; else the length; else the connection's end.
  if (headRequest || code < 200 || code === 204 || code === 304) return { ...base, framing: "none" };
  if (coding !== undefined) {
    if (!/(^|,)\s*chunked\s*$/i.test(coding)) return { ...base, framing: "close", keepAlive: false };
    return { ...base, framing: "chunked" };
  }
  if (length !== undefined) {
    if (!/^\d{1,15}$/.test(length))
      throw new Error(`the upstream sent a bad Content-Length: ${JSON.stringify(length.slice(0, 20))}`);
    return { ...base, framing: "length", length: Number(length) };
  }
  return { ...base, framing: "close", keepAlive: false };
}
