import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { classifyFetchFailure, type FetchLike } from "../../src/http/fetch";
import { createHttp1Fetch } from "../../bench/http1-client";
import { startEverything, type Peer } from "../peers/everything";
import { freePort } from "../peers/ports";
import { waitFor } from "../support/wait";

// A differential test of the candidate upstream client (bench/http1-client.ts) against Bun's fetch, on real servers on
// loopback: Bun.serve (lengths, chunked, an event stream, 204, HEAD, gzip passed through), a raw TCP server (a body
// that ends with the connection; a keep-alive connection closed as the next request comes), node:http (idle
// keep-alive connections closed by the server), server-everything through the MCP SDK client, and https with a CA
// made here by openssl. Both clients get the same requests; their answers must be the same.

const work = mkdtempSync(join(tmpdir(), "cs-http1-"));
const http1 = createHttp1Fetch({ fallback: fetch });
let bun: ReturnType<typeof Bun.serve>;
let base: string;
const large = Buffer.alloc(2 * 1024 * 1024 + 7, "abcdefgh");
const serverAborts: string[] = [];

beforeAll(() => {
  bun = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 30,
    async fetch(request) {
      const { pathname } = new URL(request.url);
      if (pathname === "/echo") {
        return Response.json(
          {
            method: request.method,
            body: await request.text(),
            type: request.headers.get("content-type"),
            test: request.headers.get("x-test"),
          },
          { headers: { "x-echo": "1" } },
        );
      }
      if (pathname === "/length") return new Response("hello", { headers: { "content-type": "text/plain" } });
      if (pathname === "/large") return new Response(large, { headers: { "content-type": "application/octet-stream" } });
      if (pathname === "/chunked") {
        const parts = ["one ", "two ", "three"];
        return new Response(
          new ReadableStream({
            async pull(c) {
              const part = parts.shift();
              if (part === undefined) return c.close();
              await Bun.sleep(5);
              c.enqueue(new TextEncoder().encode(part));
            },
          }),
        );
      }
      if (pathname === "/sse") {
        let n = 0;
        request.signal.addEventListener("abort", () => serverAborts.push("sse"));
        return new Response(
          new ReadableStream({
            async pull(c) {
              if (n === 3) return c.close();
              if (n > 0) await Bun.sleep(request.headers.get("x-slow") ? 60_000 : 30);
              c.enqueue(new TextEncoder().encode(`id: ${n}\ndata: {"n":${n++}}\n\n`));
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      if (pathname === "/empty") return new Response(null, { status: 204, headers: { "x-empty": "yes" } });
      if (pathname === "/gzip")
        return new Response(gzipSync("compressed body"), {
          headers: { "content-encoding": "gzip", "content-type": "text/plain" },
        });
      if (pathname === "/missing") return new Response("not here", { status: 404, headers: { "set-cookie": "a=b" } });
      if (pathname === "/never") {
        request.signal.addEventListener("abort", () => serverAborts.push("never"));
        return new Promise<Response>(() => undefined);
      }
      return new Response("?", { status: 400 });
    },
  });
  base = `http://127.0.0.1:${bun.port}`;
});
afterAll(() => {
  http1.close();
  bun.stop(true);
  rmSync(work, { recursive: true, force: true });
});

type Seen = { status: number; statusText: string; headers: Record<string, string>; body: string };
/** What a caller sees of an answer: the status, the headers that are not per-connection, the body's bytes. */
async function seen(response: Response): Promise<Seen> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!["date", "connection", "keep-alive", "transfer-encoding"].includes(name)) headers[name] = value;
  });
  return {
    status: response.status,
    statusText: response.statusText,
    headers,
    body: Buffer.from(await response.arrayBuffer()).toString("base64"),
  };
}
async function expectSame(url: string, init: RequestInit = {}, extra: RequestInit = {}) {
  const viaFetch = await seen(await fetch(url, { ...init, ...extra, decompress: false } as RequestInit));
  const viaHttp1 = await seen(await http1(url, { ...init, ...extra }));
  expect(viaHttp1).toEqual(viaFetch);
  return viaHttp1;
}

test("the same answers as fetch: a JSON POST, lengths small and large, chunked, 204, 404 with its cookie, HEAD, gzip passed as it came", async () => {
  const echo = await expectSame(`${base}/echo?q=1`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-test": "t" },
    body: new TextEncoder().encode('{"a":1}'),
  });
  expect(JSON.parse(Buffer.from(echo.body, "base64").toString())).toEqual({
    method: "POST",
    body: '{"a":1}',
    type: "application/json",
    test: "t",
  });
  expect((await expectSame(`${base}/length`)).body).toBe(Buffer.from("hello").toString("base64"));
  expect(Buffer.from((await expectSame(`${base}/large`)).body, "base64").equals(large)).toBe(true);
  expect(Buffer.from((await expectSame(`${base}/chunked`)).body, "base64").toString()).toBe("one two three");
  expect((await expectSame(`${base}/empty`)).status).toBe(204);
  expect((await expectSame(`${base}/missing`)).headers["set-cookie"]).toBe("a=b");
  expect((await expectSame(`${base}/length`, { method: "HEAD" })).body).toBe("");
  expect((await expectSame(`${base}/gzip`, { headers: { "accept-encoding": "gzip" } })).headers["content-encoding"]).toBe("gzip");
  // A POST without a body, and a DELETE.
  await expectSame(`${base}/echo`, { method: "POST" });
  await expectSame(`${base}/echo`, { method: "DELETE" });
});

test("an event stream is handed over at its head and streams event by event; a reader that cancels closes the upstream request", async () => {
  const response = await http1(`${base}/sse`);
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  const reader = response.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  expect(first).toBe('id: 0\ndata: {"n":0}\n\n');
  let rest = "";
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
  expect(rest).toBe('id: 1\ndata: {"n":1}\n\nid: 2\ndata: {"n":2}\n\n');
  const slow = await http1(`${base}/sse`, { headers: { "x-slow": "1" } });
  const slowReader = slow.body!.getReader();
  await slowReader.read();
  await slowReader.cancel();
  await waitFor("the server to see the stream go", () => serverAborts.includes("sse"), 1_000);
});

test("an abort ends a request still waiting for its answer at once, and the server sees it go", async () => {
  const started = performance.now();
  const error = await http1(`${base}/never`, { signal: AbortSignal.timeout(100) }).catch((e) => e);
  expect(performance.now() - started).toBeLessThan(2_000);
  expect(classifyFetchFailure(error, 100)).toEqual({ kind: "timeout", detail: "no answer within 0.1 s" });
  await waitFor("the server to see the request go", () => serverAborts.includes("never"), 1_000);
  const controller = new AbortController();
  controller.abort();
  expect(await http1(`${base}/length`, { signal: controller.signal }).catch((e) => (e as Error).name)).toBe("AbortError");
});

test("nobody listening: refused, in the words fetch's failure gets", async () => {
  const port = await freePort();
  const [viaFetch, viaHttp1] = await Promise.all([
    fetch(`http://127.0.0.1:${port}/`).catch((e) => e),
    http1(`http://127.0.0.1:${port}/`).catch((e) => e),
  ]);
  expect(classifyFetchFailure(viaHttp1)).toEqual(classifyFetchFailure(viaFetch));
  expect(classifyFetchFailure(viaHttp1).detail).toBe("connection refused");
});

/** A raw HTTP/1.1 server on node:net: `answer` writes the response to each request (by its number on the connection). */
async function rawServer(
  answer: (socket: Socket, nth: number, connection: number) => void,
): Promise<{ url: string; server: TcpServer; connections: () => number }> {
  let connections = 0;
  const server = createTcpServer((socket) => {
    const connection = ++connections;
    let nth = 0;
    let buffered = "";
    socket.on("data", (data) => {
      buffered += data.toString("latin1");
      while (buffered.includes("\r\n\r\n")) {
        const end = buffered.indexOf("\r\n\r\n") + 4;
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + length) return;
        buffered = buffered.slice(end + length);
        answer(socket, ++nth, connection);
      }
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server, connections: () => connections };
}

test("a body that ends with the connection (no length, no chunks) is read to the close, as fetch reads it", async () => {
  const raw = await rawServer((socket) => {
    socket.write("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nuntil the ");
    setTimeout(() => socket.end("end"), 20);
  });
  try {
    expect(Buffer.from((await expectSame(`${raw.url}/`)).body, "base64").toString()).toBe("until the end");
  } finally {
    raw.server.close();
  }
});

test("keep-alive: connections are reused; one the server closed while idle costs nothing; one dropped as a request came is retried only if the request is idempotent", async () => {
  // The server answers once per connection and keeps it open, then drops it without a word when a second request comes.
  const raw = await rawServer((socket, nth) => {
    if (nth > 1) return void socket.destroy();
    socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
  });
  const client = createHttp1Fetch({ fallback: fetch });
  try {
    // A GET (or DELETE) goes again on a new connection.
    for (let i = 0; i < 3; i++) expect(await (await client(`${raw.url}/`)).text()).toBe("ok");
    expect(raw.connections()).toBe(3);
    // A POST may have been acted on: it fails as with fetch (RFC 9112 §9.3.1.1), and the next one gets a new connection.
    const post = () =>
      client(`${raw.url}/`, { method: "POST", body: new Uint8Array([1]) })
        .then((r) => r.text())
        .catch((e) => classifyFetchFailure(e).detail);
    // (The first goes on the connection the last GET left idle.)
    expect([await post(), await post(), await post()]).toEqual([
      "connection closed by the server",
      "ok",
      "connection closed by the server",
    ]);
    const viaFetch = () =>
      fetch(`${raw.url}/`, { method: "POST", body: "x" })
        .then((r) => r.text())
        .catch((e) => classifyFetchFailure(e).detail);
    expect([await viaFetch(), await viaFetch()]).toEqual(["ok", "connection closed by the server"]);
  } finally {
    client.close();
    raw.server.close();
  }
  // A server that closes a keep-alive connection after 50 ms idle: the next request goes on a new one.
  const idle = await rawServer((socket) => {
    socket.write("HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nfine");
    socket.setTimeout(50, () => socket.end());
  });
  try {
    expect(await (await http1(`${idle.url}/`)).text()).toBe("fine");
    expect(await (await http1(`${idle.url}/`)).text()).toBe("fine");
    expect(idle.connections()).toBe(1); // reused
    await Bun.sleep(150); // the server closed it meanwhile
    expect(await (await http1(`${idle.url}/`)).text()).toBe("fine");
    expect(idle.connections()).toBe(2);
  } finally {
    idle.server.close();
  }
});

test("bad answers are errors, not guesses: a broken status line, conflicting lengths, a bad chunk size", async () => {
  const answers = [
    "HTTP/1.1 OK\r\n\r\n",
    "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok",
    "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
  ];
  for (const answer of answers) {
    const raw = await rawServer((socket) => socket.write(answer));
    try {
      const result = await http1(`${raw.url}/`)
        .then((r) => r.text())
        .catch((e) => e);
      expect(result).toBeInstanceOf(Error);
    } finally {
      raw.server.close();
    }
  }
});

let everything: Peer;
test("server-everything through the MCP SDK client: the same tools and results as with fetch", async () => {
  everything = await startEverything();
  try {
    const run = async (client: FetchLike) => {
      const mcp = new Client({ name: "http1-test", version: "1" });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(everything.url), { fetch: client }));
      const tools = (await mcp.listTools()).tools.map((t) => t.name).sort();
      const echo = await mcp.callTool({ name: "echo", arguments: { message: "differential" } });
      const sum = await mcp.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } });
      await mcp.close();
      return { tools, echo, sum };
    };
    const viaHttp1 = await run(http1);
    expect(viaHttp1).toEqual(await run(fetch));
    expect(viaHttp1.echo).toEqual({ content: [{ type: "text", text: "Echo: differential" }] });
  } finally {
    await everything.stop();
  }
}, 30_000);

test("https with a CA made here: the same answers as fetch trusting it; without the CA the certificate is refused", async () => {
  const keyFile = join(work, "tls.key");
  const certFile = join(work, "tls.crt");
  const openssl = Bun.spawn(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=http1.test",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      keyFile,
      "-out",
      certFile,
    ],
    { stdin: "ignore", stdout: "ignore", stderr: "ignore" },
  );
  expect(await openssl.exited).toBe(0);
  const [cert, key] = [readFileSync(certFile, "utf8"), readFileSync(keyFile, "utf8")];
  const secure = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert, key },
    fetch: (r) => Response.json({ over: "tls", method: r.method }),
  });
  const trusting = createHttp1Fetch({ fallback: fetch, ca: cert });
  try {
    const url = `https://127.0.0.1:${secure.port}/x`;
    const viaFetch = await seen(await fetch(url, { method: "POST", body: "{}", tls: { ca: cert } } as RequestInit));
    expect(await seen(await trusting(url, { method: "POST", body: new TextEncoder().encode("{}") }))).toEqual(viaFetch);
    const refused = await http1(url).catch((e) => e);
    expect(refused).toBeInstanceOf(Error);
    expect(classifyFetchFailure(refused).detail).toStartWith("TLS failed");
  } finally {
    trusting.close();
    secure.stop(true);
  }
});
