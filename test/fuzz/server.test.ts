import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { ADMIN, startTestService, type TestService } from "../support/service";

// Hostile input against the real server (Bun.serve, its HTTP parser, the native proxy route), over sockets.
let service: TestService;
let port: number;
beforeAll(async () => {
  service = await startTestService();
  port = Number(new URL(service.url).port);
});
afterAll(() => service.stop());

/** Sends raw bytes (asking for the connection to close after the answer) and reads what comes back. */
function raw(text: string): Promise<string> {
  const [line, ...rest] = text.split("\r\n");
  const request = [line, "Connection: close", ...rest].join("\r\n");
  return new Promise((resolve) => {
    let out = "";
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    socket.on("data", (d) => (out += d.toString("latin1")));
    socket.on("close", () => resolve(out));
    socket.on("error", () => resolve(out));
    setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, 1_000);
  });
}

test("hostile bodies, anonymous or not, never delay /healthz by more than 100 ms", async () => {
  const basic = `Basic ${btoa(`${ADMIN.username}:${ADMIN.password}`)}`;
  const deep = (levels: number) => `{"url":"https://a.example","metadata":{"x":${"[".repeat(levels)}${"]".repeat(levels)}}}`;
  const hostile = [
    ...[12_000, 20_000].flatMap((levels) => [{ body: deep(levels) }, { body: deep(levels), authorization: basic }]),
    { body: `{"url":"https://a.example","metadata":${'{"a":'.repeat(30_000)}1${"}".repeat(30_000)}}`, authorization: basic },
    { body: "x".repeat(2_000_000), authorization: basic },
    { body: `{"url":"${"u".repeat(70_000)}"}`, authorization: basic },
  ];
  let worst = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const started = performance.now();
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      worst = Math.max(worst, performance.now() - started);
      await Bun.sleep(5);
    }
  })();
  const statuses = await Promise.all(
    hostile.map(async ({ body, authorization }) => {
      const res = await fetch(`${service.url}/api/v1/connectors`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(authorization && { authorization }) },
        body,
      });
      expect(res.headers.get("content-type")).toStartWith("application/problem+json");
      return res.status;
    }),
  );
  polling = false;
  await poller;
  expect(statuses).toEqual([401, 422, 401, 422, 422, 413, 422]);
  console.log(`worst /healthz delay under hostile bodies: ${worst.toFixed(1)} ms`);
  expect(worst).toBeLessThan(100);
});

test("CONNECT is a 404 problem that says this is no forward proxy", async () => {
  const answer = await raw("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
  expect(answer).toStartWith("HTTP/1.1 404");
  expect(answer).toMatch(/content-type: application\/problem\+json/i);
  expect(answer).toContain("CONNECT is not served: this service is not a forward proxy");
});

test.each([
  ["an unknown method", "BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n"],
  ["an absolute-form target", "GET http://elsewhere.example/api/v1/connectors HTTP/1.1\r\nHost: x\r\n\r\n"],
  ["an authority-form target (CONNECT)", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"],
  ["an asterisk target", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"],
  ["two Host headers", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
  [
    "two Content-Length headers",
    "POST /api/v1/connectors HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
  ],
  [
    "two Authorization headers",
    `GET /api/v1/connectors HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ${btoa("admin:x")}\r\nAuthorization: Bearer cst_x\r\n\r\n`,
  ],
  ["an obsolete folded header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n"],
  ["a NUL in the path", "GET /api/v1/connectors/%00 HTTP/1.1\r\nHost: x\r\n\r\n"],
  ["a broken percent-encoding", "GET /api/v1/connectors/%zz%c3 HTTP/1.1\r\nHost: x\r\n\r\n"],
  ["a 20 kB URL", `GET /api/v1/connectors/${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
  [
    "a body longer than declared",
    "POST /api/v1/connectors HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}{}{}",
  ],
  [
    "chunked and Content-Length together",
    "POST /api/v1/connectors HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
  ],
  ["HTTP/1.0 without Host", "GET /healthz HTTP/1.0\r\n\r\n"],
])("%s: no 5xx; what the service itself answers is a problem document", async (_what, request) => {
  const answer = await raw(request);
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);
  expect(status < 500).toBe(true);
  // Answers with a request id come from the service (the runtime's own parser refusals carry none, and no body).
  if (status >= 400 && /x-request-id:/i.test(answer)) expect(answer).toMatch(/content-type: application\/problem\+json/i);
});
