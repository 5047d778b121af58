/**
 * A bounded soak: mixed API and proxy load on one connector-service process, with event streams opened and closed
 * all along, for a fixed time; every `--sample` seconds it reports the service's RSS, its open descriptors, latency
 * percentiles and errors, and at the end whether memory plateaued and descriptors came back to their baseline.
 *
 *   bun bench/soak.ts [--minutes 10] [--sample 30] [--concurrency 8] [--streams 50]
 *
 * Uses dist/connector-service when built, else runs the source with Bun. Everything binds 127.0.0.1 and stops at the end.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const MINUTES = Number(args.get("minutes") ?? 10);
const SAMPLE_S = Number(args.get("sample") ?? 30);
const CONCURRENCY = Number(args.get("concurrency") ?? 8);
const STREAMS = Number(args.get("streams") ?? 50);
const PASSWORD = "soak-admin-password";

/** An MCP upstream: JSON answers to POSTs, an event stream with an event every 200 ms to GETs. */
function startUpstream() {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      if (request.method === "GET") {
        let timer: ReturnType<typeof setInterval>;
        let n = 0;
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode(": open\n\n"));
              timer = setInterval(
                () =>
                  controller.enqueue(
                    new TextEncoder().encode(
                      `id: ${++n}\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":${n}}}\n\n`,
                    ),
                  ),
                200,
              );
            },
            cancel: () => clearInterval(timer),
          }),
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      if (request.method === "DELETE") return new Response(null, { status: 200 });
      const message = (await request.json()) as { id?: number; method: string };
      if (message.id === undefined) return new Response(null, { status: 202 });
      const result =
        message.method === "initialize"
          ? { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "soak-upstream", version: "1" } }
          : { content: [{ type: "text", text: "pong" }] };
      return Response.json({ jsonrpc: "2.0", id: message.id, result });
    },
  });
}

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]! : 0;

async function main() {
  const work = mkdtempSync(join(tmpdir(), "cs-soak-"));
  const upstream = startUpstream();
  const binary = join(ROOT, "dist/connector-service");
  const command = existsSync(binary) ? [binary] : [process.execPath, join(ROOT, "src/index.ts"), "serve"];
  const service = Bun.spawn(command, {
    env: {
      PATH: process.env.PATH!,
      DATABASE__PATH: join(work, "cs.db"),
      SERVER__PORT: "0",
      AUTH__ADMIN_PASSWORD: PASSWORD,
      PROXY__MAX_STREAMS_PER_USER: "100000",
      PROXY__MAX_STREAMS_PER_CONNECTOR: "100000",
    },
    stdout: "pipe",
    stderr: "inherit",
  });
  // The "listening" line gives the URL; the rest of the log (a line per request) is read and dropped.
  let url = "";
  const reader = service.stdout.getReader();
  for (let text = ""; !url;) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`the service ended: ${text}`);
    text += new TextDecoder().decode(chunk.value);
    url = /"url":"(http:\/\/[^"]+)"/.exec(text)?.[1] ?? "";
  }
  void (async () => {
    while (!(await reader.read()).done);
  })();

  const basic = `Basic ${btoa(`admin:${PASSWORD}`)}`;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: auth, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: res.status === 204 ? undefined : await res.json().catch(() => undefined) };
  };
  let auth = basic;
  auth = `Bearer ${(await api("POST", "/api/v1/tokens", { name: "soak" })).body.token}`;
  const connector = (await api("POST", "/api/v1/connectors", { url: `http://127.0.0.1:${upstream.port}/mcp` })).body.id as string;
  const connected = await api("POST", `/api/v1/connectors/${connector}/connect`, {});
  if (connected.body?.state !== "connected") throw new Error(`connect failed: ${JSON.stringify(connected.body)}`);
  const mcp = `${url}/api/v1/connectors/${connector}/mcp`;
  const mcpHeaders = { authorization: auth, "content-type": "application/json", accept: "application/json, text/event-stream" };

  // Measured as the end is, after 3 s idle: the set-up's password hashing (argon2's memory) is not the baseline.
  await Bun.sleep(3000);
  const baseline = { rss: rssKiB(service.pid), fds: fds(service.pid) };
  const latencies: number[] = [];
  const counts = { requests: 0, errors: 0, streamsOpened: 0 };
  const deadline = Date.now() + MINUTES * 60_000;
  const timed = async (run: () => Promise<Response>) => {
    const started = performance.now();
    try {
      const res = await run();
      await res.arrayBuffer();
      latencies.push(performance.now() - started);
      counts.requests++;
      if (res.status >= 500) counts.errors++;
    } catch {
      counts.errors++;
    }
  };
  const mix = [
    ...Array(7).fill(() =>
      timed(() =>
        fetch(mcp, {
          method: "POST",
          headers: mcpHeaders,
          body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{}}}',
        }),
      ),
    ),
    () => timed(() => fetch(`${url}/api/v1/connectors?limit=20`, { headers: { authorization: auth } })),
    async () => {
      const created = await api("POST", "/api/v1/connectors", { url: `https://soak-${crypto.randomUUID()}.example/mcp` });
      counts.requests++;
      if (created.status !== 201) counts.errors++;
      else
        await timed(() =>
          fetch(`${url}/api/v1/connectors/${created.body.id}`, { method: "DELETE", headers: { authorization: auth } }),
        );
    },
    async () => {
      // A stream opened, read for a moment (1–3 events), closed: clients that come and go.
      const controller = new AbortController();
      try {
        const res = await fetch(mcp, {
          headers: { authorization: auth, accept: "text/event-stream" },
          signal: controller.signal,
        });
        counts.streamsOpened++;
        const r = res.body!.getReader();
        for (let i = 0; i < 1 + Math.floor(Math.random() * 3); i++) await r.read();
      } catch {
        counts.errors++;
      } finally {
        controller.abort();
      }
    },
  ];
  // Long-lived streams, replaced one by one all along.
  const longLived: AbortController[] = [];
  const openLong = () => {
    const controller = new AbortController();
    longLived.push(controller);
    fetch(mcp, { headers: { authorization: auth, accept: "text/event-stream" }, signal: controller.signal })
      .then(async (res) => {
        counts.streamsOpened++;
        const r = res.body!.getReader();
        while (!(await r.read()).done);
      })
      .catch(() => undefined);
  };
  for (let i = 0; i < STREAMS; i++) openLong();
  const churn = setInterval(() => {
    longLived.shift()?.abort();
    openLong();
  }, 500);

  const samples: string[] = [];
  const header = "minute   rss MiB   fds   requests   p50 ms   p99 ms   errors   streams opened";
  console.log(header);
  const sample = () => {
    const sorted = latencies.splice(0).sort((a, b) => a - b);
    const line = [
      ((MINUTES * 60_000 - (deadline - Date.now())) / 60_000).toFixed(1).padStart(6),
      (rssKiB(service.pid) / 1024).toFixed(1).padStart(9),
      String(fds(service.pid)).padStart(5),
      String(counts.requests).padStart(10),
      percentile(sorted, 50).toFixed(2).padStart(8),
      percentile(sorted, 99).toFixed(2).padStart(8),
      String(counts.errors).padStart(8),
      String(counts.streamsOpened).padStart(16),
    ].join(" ");
    samples.push(line);
    console.log(line);
  };
  const sampler = setInterval(sample, SAMPLE_S * 1000);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < deadline) await mix[Math.floor(Math.random() * mix.length)]!();
    }),
  );
  clearInterval(churn);
  clearInterval(sampler);
  if (latencies.length) sample(); // the last interval, when it did not end on a sample
  for (const controller of longLived) controller.abort();
  await Bun.sleep(3000);
  const end = { rss: rssKiB(service.pid), fds: fds(service.pid) };
  console.log(
    `\nbaseline before load: ${(baseline.rss / 1024).toFixed(1)} MiB RSS, ${baseline.fds} descriptors; after load and 3 s idle: ${(end.rss / 1024).toFixed(1)} MiB RSS, ${end.fds} descriptors`,
  );
  console.log(
    `requests: ${counts.requests}, errors: ${counts.errors}, streams opened: ${counts.streamsOpened}, ${MINUTES} min, concurrency ${CONCURRENCY}, ${STREAMS} long-lived streams churned`,
  );
  service.kill("SIGTERM");
  await service.exited;
  await upstream.stop(true);
  rmSync(work, { recursive: true, force: true });
}

await main();
process.exit(0);
