import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { resolve } from "node:path";
import { scriptedServer } from "../peers/scripted-server";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { apiClient, ADMIN } from "../support/service";

/** An MCP server whose GET is a notification stream that stays open (a comment every 10 s), in-process or on a port. */
function streamingMcp() {
  const mcp = scriptedServer();
  const opened = { count: 0 };
  const handler = (request: Request) => {
    if (request.method !== "GET") return mcp.handler(request);
    opened.count++;
    let timer: ReturnType<typeof setInterval>;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(": open\n\n"));
        timer = setInterval(() => controller.enqueue(new TextEncoder().encode(": still here\n\n")), 10_000);
      },
      cancel: () => clearInterval(timer),
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  };
  return { handler, opened };
}

describe("caps on open exchanges", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { PROXY__MAX_STREAMS_PER_CONNECTOR: "3", PROXY__MAX_STREAMS_PER_USER: "5" } });
    t.network.serve("https://streams.example", streamingMcp().handler);
  });
  afterAll(() => t.close());

  const stream = (as: TestApp["admin"], id: string) =>
    t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
        headers: { authorization: `Bearer ${as.token}`, accept: "text/event-stream" },
      }),
    );

  test("beyond PROXY__MAX_STREAMS_PER_CONNECTOR a stream is a 429 naming the setting; closing one frees its place", async () => {
    const id = await connectedConnector(t.api, "https://streams.example/mcp");
    const open = await Promise.all([stream(t.admin, id), stream(t.admin, id), stream(t.admin, id)]);
    for (const res of open) expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const refused = await stream(t.admin, id);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect((await refused.json()).detail).toContain("PROXY__MAX_STREAMS_PER_CONNECTOR");
    await open[0]!.body!.cancel();
    const again = await stream(t.admin, id);
    expect(again.status).toBe(200);
    await Promise.all([again, ...open.slice(1)].map((res) => res.body!.cancel()));
  });

  test("beyond PROXY__MAX_STREAMS_PER_USER a stream is a 429; another user is not held back", async () => {
    const carol = await t.user("carol-streams");
    const ids = [
      await connectedConnector(carol.api, "https://streams.example/mcp"),
      await connectedConnector(carol.api, "https://streams.example/mcp"),
    ];
    const open = await Promise.all([0, 0, 0, 1, 1].map((i) => stream(carol, ids[i]!)));
    for (const res of open) expect(res.status).toBe(200);
    const refused = await stream(carol, ids[1]!);
    expectProblem({ status: refused.status, headers: refused.headers, body: await refused.json(), text: "" }, 429);
    const dave = await t.user("dave-streams");
    const daves = await connectedConnector(dave.api, "https://streams.example/mcp");
    const other = await stream(dave, daves);
    expect(other.status).toBe(200);
    await Promise.all([other, ...open].map((res) => res.body!.cancel()));
  });
});

describe("1,000 open streams through one process", () => {
  // The service run as `connector-service serve` from source (so it raises its own fetch limit, as the binary does),
  // a streaming MCP server on a loopback port, and 1,000 clients over raw sockets holding GET streams open.
  const upstream = streamingMcp();
  let server: ReturnType<typeof Bun.serve>;
  let proc: Bun.Subprocess<"ignore", "pipe", "ignore">;
  let url = "";
  const sockets: Socket[] = [];

  beforeAll(async () => {
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: upstream.handler });
    // Without BUN_CONFIG_MAX_HTTP_REQUESTS in its environment: `serve` must raise the limit itself.
    const { BUN_CONFIG_MAX_HTTP_REQUESTS: _, ...env } = process.env;
    proc = Bun.spawn([process.execPath, resolve(import.meta.dir, "../../src/index.ts"), "serve"], {
      env: {
        ...env,
        DATABASE__PATH: ":memory:",
        SERVER__PORT: "0",
        AUTH__ADMIN_PASSWORD: ADMIN.password,
        PROXY__MAX_STREAMS_PER_CONNECTOR: "2000",
        PROXY__MAX_STREAMS_PER_USER: "2000",
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "ignore",
    });
    const reader = proc.stdout.getReader();
    let text = "";
    while (!url) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the service ended before listening: ${text}`);
      text += new TextDecoder().decode(chunk.value);
      url = /"url":"(http:\/\/[^"]+)"/.exec(text)?.[1] ?? "";
    }
    // Keep reading its log, or a full pipe would stall the service.
    void (async () => {
      while (!(await reader.read()).done);
    })();
  }, 30_000);
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    proc.kill("SIGTERM");
    await proc.exited;
    await server.stop(true);
  });

  /** A GET stream over a raw socket (the test process's own fetch limit stays out of it); resolves on its headers. */
  const openStream = (path: string, authorization: string) =>
    new Promise<string>((resolveHead, reject) => {
      const { port } = new URL(url);
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.write(
          `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${authorization}\r\nAccept: text/event-stream\r\n\r\n`,
        );
      });
      sockets.push(socket);
      let head = "";
      socket.on("data", (data) => {
        head += data.toString("latin1");
        if (head.includes("\r\n\r\n")) resolveHead(head.slice(0, head.indexOf("\r\n")));
      });
      socket.on("error", reject);
    });

  test("with 1,000 streams open (more than Bun's 256 default), other requests are still answered at once", async () => {
    const api = apiClient(url);
    const token = (await api("POST", "/api/v1/tokens", { body: { name: "streams" } })).body.token as string;
    const id = await connectedConnector(api, `http://127.0.0.1:${server.port}/mcp`);
    const path = `/api/v1/connectors/${id}/mcp`;
    for (let batch = 0; batch < 10; batch++) {
      const heads = await Promise.all(Array.from({ length: 100 }, () => openStream(path, `Bearer ${token}`)));
      for (const head of heads) expect(head).toBe("HTTP/1.1 200 OK");
    }
    expect(upstream.opened.count).toBeGreaterThanOrEqual(1000);
    const started = performance.now();
    const ping = await api("POST", path, {
      as: { token },
      headers: { accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
    });
    const ms = performance.now() - started;
    expect(ping.status).toBe(200);
    expect(ping.body).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    // Not a benchmark: with Bun's default limit this request would wait for a stream to close, i.e. forever.
    expect(ms).toBeLessThan(1_000);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/mcp_proxy_open_streams 100\d/);
  }, 60_000);
});
