/**
 * Which HTTP client should the proxy call its upstream with? The same minimal forwarder (Bun.serve in, one upstream
 * call out, the upstream's status, content-type and body back) built three times, each in its own process, with:
 *
 *   fetch        Bun's global fetch, as the service uses it today (keep-alive by default);
 *   node:http    `http.request` with a keep-alive `http.Agent` (maxSockets = the load's connections);
 *   http1        a keep-alive HTTP/1.1 client on Bun.connect (bench/http1-client.ts), the candidate;
 *                first a prototype in this file (bench/RESULTS.md, "Upstream HTTP client").
 *
 * Each forwarder reads the client's JSON-RPC POST whole and sends it on as bytes with a Content-Length, and takes the
 * upstream's answer whole, as the service does for small JSON bodies. The upstream is bench/upstream.ts; "direct" is
 * wrk straight at it (the floor). Load: Debian's wrk with bench/wrk-post.lua, one thread, `--connections` for
 * `--seconds` per target and round, then one connection for `--latency-seconds` (p50 at c=1). Rounds alternate the
 * targets in a rotated order; medians. Forwarder CPU per request is user + system time from /proc.
 *
 *   bun bench/upstream-clients.ts [--rounds 3] [--seconds 5] [--connections 32] [--latency-seconds 3]
 *
 * Before and after the load, every forwarder is checked: concurrent calls with distinct ids must each come back with
 * their own id, a notification with 202 and no body. Every process binds 127.0.0.1, every wrk run is bounded in time
 * (and killed if it overruns), and every child is stopped at the end, also on an error or Ctrl-C.
 *
 * Internal: `bun bench/upstream-clients.ts forwarder <client> <upstream-url> <port> <max-sockets> <parent-pid>`.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import { join, resolve } from "node:path";
import { freePort, waitForHttp } from "../test/peers/ports";
import { benchChildren, runBench } from "./children";
import { createHttp1Fetch } from "./http1-client";
import { cpuMs } from "./cpu";

type Bytes = Uint8Array<ArrayBuffer>;
type Answer = { status: number; contentType: string | null; body: Bytes };
type Forward = (body: Bytes, headers: Record<string, string>) => Promise<Answer>;

const CLIENTS = ["fetch", "node:http", "http1"] as const;
type ClientName = (typeof CLIENTS)[number];

// ---------------------------------------------------------------------------------------------------------------
// The clients.

/** The candidate client (bench/http1-client.ts: a pool of keep-alive connections on Bun.connect), used as a relay would. */
function createHttp1Client(upstream: URL): Forward {
  const client = createHttp1Fetch({ fallback: fetch });
  return async (body, headers) => {
    const response = await client(upstream, { method: "POST", headers, body });
    return {
      status: response.status,
      contentType: response.headers.get("content-type"),
      body: new Uint8Array(await response.arrayBuffer()),
    };
  };
}

// Bun's fetch (what the service uses) and node:http with a keep-alive Agent.

function createFetchClient(upstream: URL): Forward {
  const url = upstream.href;
  return async (body, headers) => {
    const response = await fetch(url, { method: "POST", headers, body });
    return { status: response.status, contentType: response.headers.get("content-type"), body: await response.bytes() };
  };
}

function createNodeHttpClient(upstream: URL, maxSockets: number): Forward {
  const agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  const options = {
    agent,
    hostname: upstream.hostname,
    port: Number(upstream.port || 80),
    path: `${upstream.pathname}${upstream.search}`,
    method: "POST",
  };
  return (body, headers) =>
    new Promise<Answer>((resolve, reject) => {
      const request = http.request({ ...options, headers: { ...headers, "content-length": body.byteLength } }, (response) => {
        const parts: Buffer[] = [];
        response.on("data", (part: Buffer) => parts.push(part));
        response.on("end", () =>
          resolve({
            status: response.statusCode!,
            contentType: response.headers["content-type"] ?? null,
            body: Buffer.concat(parts),
          }),
        );
        response.on("error", reject);
      });
      request.on("error", reject);
      request.end(body);
    });
}

// ---------------------------------------------------------------------------------------------------------------
// The forwarder process.

function runForwarder(client: ClientName, upstreamUrl: string, port: number, maxSockets: number, parent: number) {
  const upstream = new URL(upstreamUrl);
  const forward =
    client === "fetch"
      ? createFetchClient(upstream)
      : client === "node:http"
        ? createNodeHttpClient(upstream, maxSockets)
        : createHttp1Client(upstream);
  const stats = { forwarded: 0, failed: 0, lastError: "" };
  Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(request) {
      if (request.method === "GET" && new URL(request.url).pathname === "/stats") return Response.json(stats);
      const body = new Uint8Array(await request.arrayBuffer());
      const headers: Record<string, string> = { "content-type": request.headers.get("content-type") ?? "application/json" };
      for (const name of ["accept", "mcp-protocol-version", "mcp-session-id"]) {
        const value = request.headers.get(name);
        if (value !== null) headers[name] = value;
      }
      try {
        const answer = await forward(body, headers);
        stats.forwarded++;
        return new Response(answer.body.byteLength > 0 ? answer.body : null, {
          status: answer.status,
          headers: answer.contentType === null ? {} : { "content-type": answer.contentType },
        });
      } catch (e) {
        stats.failed++;
        stats.lastError = (e as Error).message;
        return new Response(`upstream call failed: ${(e as Error).message}`, { status: 502 });
      }
    },
  });
  // Orphaned (the bench was killed outright): go too.
  setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch {
      process.exit(0);
    }
  }, 1000).unref();
}

// ---------------------------------------------------------------------------------------------------------------
// The bench.

const ROOT = resolve(import.meta.dir, "..");
const children = benchChildren(5_000);

type WrkResult = { requests: number; rps: number; p50_ms: number; p99_ms: number; errors: number };
type Target = { name: "direct" | ClientName; url: string; pid: number | undefined };
type Sample = {
  rps: number;
  p50_loaded_ms: number;
  p50_c1_ms: number;
  cpu_us: number | undefined;
  upstream_cpu_us: number;
  errors: number;
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function runWrk(url: string, connections: number, seconds: number): Promise<WrkResult> {
  const proc = children.track(
    Bun.spawn(
      ["wrk", "-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "-s", join(ROOT, "bench/wrk-post.lua"), url],
      {
        stdout: "pipe",
        stderr: "inherit",
        env: { ...process.env, WRK_AUTHORIZATION: "" },
      },
    ),
  );
  const overrun = setTimeout(() => proc.kill("SIGKILL"), (seconds + 20) * 1000);
  try {
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    const line = out.split("\n").find((l) => l.startsWith("WRK_JSON "));
    if (!line) throw new Error(`wrk printed no result:\n${out}`);
    const r = JSON.parse(line.slice("WRK_JSON ".length)) as {
      requests: number;
      seconds: number;
      p50_ms: number;
      p99_ms: number;
      errors: number;
    };
    return { requests: r.requests, rps: r.requests / r.seconds, p50_ms: r.p50_ms, p99_ms: r.p99_ms, errors: r.errors };
  } finally {
    clearTimeout(overrun);
  }
}

/** Concurrent calls with distinct ids must each get their own answer back; a notification gets 202 and no body. */
async function checkForwarder(url: string, calls: number): Promise<void> {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
  };
  const one = async (id: number) => {
    const response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "ping", arguments: {} } }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    const answer = JSON.parse(text) as { id?: number; result?: { content?: { text?: string }[] } };
    if (
      response.status !== 200 ||
      !response.headers.get("content-type")?.startsWith("application/json") ||
      answer.id !== id ||
      answer.result?.content?.[0]?.text !== "pong"
    )
      throw new Error(`${url}: call ${id} answered ${response.status} ${text}`);
  };
  await Promise.all(Array.from({ length: calls }, (_, i) => one(i + 1)));
  const note = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    signal: AbortSignal.timeout(10_000),
  });
  const noteBody = await note.text();
  if (note.status !== 202 || noteBody !== "")
    throw new Error(`${url}: notification answered ${note.status} ${JSON.stringify(noteBody)}`);
}

async function main(options: { rounds: number; seconds: number; connections: number; latencySeconds: number }) {
  const { rounds, seconds, connections, latencySeconds } = options;
  console.log(`loadavg before: ${readFileSync("/proc/loadavg", "utf8").trim()}`);
  const upstreamPort = await freePort();
  const upstreamProc = children.track(
    Bun.spawn([process.execPath, join(ROOT, "bench/upstream.ts"), String(upstreamPort)], { stdout: "ignore", stderr: "inherit" }),
  );
  const upstream = `http://127.0.0.1:${upstreamPort}/mcp`;
  await waitForHttp(upstream);

  const targets: Target[] = [{ name: "direct", url: upstream, pid: undefined }];
  for (const client of CLIENTS) {
    const port = await freePort();
    const proc = children.track(
      Bun.spawn(
        [
          process.execPath,
          import.meta.path,
          "forwarder",
          client,
          upstream,
          String(port),
          String(connections),
          String(process.pid),
        ],
        {
          stdout: "ignore",
          stderr: "inherit",
        },
      ),
    );
    await waitForHttp(`http://127.0.0.1:${port}/stats`);
    targets.push({ name: client, url: `http://127.0.0.1:${port}/mcp`, pid: proc.pid });
  }
  for (const t of targets) await checkForwarder(t.url, 2 * connections);

  for (const t of targets) await runWrk(t.url, connections, 2); // warm-up: JIT, pools
  const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]));
  for (let round = 0; round < rounds; round++) {
    // Each round starts one target later, so no client always runs first or right after the same neighbour.
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
    console.log(`round ${round + 1}/${rounds}: ${order.map((t) => t.name).join(", ")}`);
    for (const t of order) {
      const cpuBefore = t.pid === undefined ? 0 : cpuMs(t.pid);
      const upstreamBefore = cpuMs(upstreamProc.pid);
      const loaded = await runWrk(t.url, connections, seconds);
      // CPU the forwarder spent per request: what its client costs, however the two cores were shared.
      const cpu_us = t.pid === undefined ? undefined : ((cpuMs(t.pid) - cpuBefore) * 1000) / loaded.requests;
      const upstream_cpu_us = ((cpuMs(upstreamProc.pid) - upstreamBefore) * 1000) / loaded.requests;
      const single = await runWrk(t.url, 1, latencySeconds);
      samples.get(t.name)!.push({
        rps: loaded.rps,
        p50_loaded_ms: loaded.p50_ms,
        p50_c1_ms: single.p50_ms,
        cpu_us,
        upstream_cpu_us,
        errors: loaded.errors + single.errors,
      });
    }
  }
  for (const t of targets) await checkForwarder(t.url, 2 * connections);
  const stats: Record<string, { forwarded: number; failed: number; lastError: string }> = {};
  for (const t of targets.slice(1))
    stats[t.name] = (await (await fetch(new URL("/stats", t.url))).json()) as {
      forwarded: number;
      failed: number;
      lastError: string;
    };
  console.log(`loadavg after: ${readFileSync("/proc/loadavg", "utf8").trim()}`);

  const summary = targets.map((t) => {
    const s = samples.get(t.name)!;
    return {
      name: t.name,
      rps: median(s.map((x) => x.rps)),
      rpsRange: [Math.min(...s.map((x) => x.rps)), Math.max(...s.map((x) => x.rps))] as const,
      p50c1: median(s.map((x) => x.p50_c1_ms)),
      p50loaded: median(s.map((x) => x.p50_loaded_ms)),
      cpu: t.pid === undefined ? undefined : median(s.map((x) => x.cpu_us!)),
      upstreamCpu: median(s.map((x) => x.upstream_cpu_us)),
      errors: s.reduce((n, x) => n + x.errors, 0),
    };
  });
  const base = summary.find((r) => r.name === "fetch")!;
  const ratio = (x: number | undefined, y: number | undefined) =>
    x === undefined || y === undefined ? "-" : `${(x / y).toFixed(2)}x`;
  const fixed = (x: number | undefined, digits: number) => (x === undefined ? "-" : x.toFixed(digits));
  console.log(
    `\nupstream HTTP client benchmark: ${rounds} rounds (rotated order), median; wrk -t1 -c${connections} ${seconds} s per target and round, -c1 ${latencySeconds} s\n`,
  );
  console.log(
    "target         req/s  (min-max)        x fetch  p50 c=1 ms  x fetch  p50 loaded ms  x fetch  fwd CPU us/req  x fetch  upstream CPU us/req  errors",
  );
  for (const r of summary) {
    console.log(
      [
        r.name.padEnd(12),
        r.rps.toFixed(0).padStart(7),
        `(${r.rpsRange[0].toFixed(0)}-${r.rpsRange[1].toFixed(0)})`.padEnd(15),
        ratio(r.rps, base.rps).padStart(8),
        r.p50c1.toFixed(3).padStart(11),
        ratio(r.p50c1, base.p50c1).padStart(8),
        r.p50loaded.toFixed(3).padStart(14),
        ratio(r.p50loaded, base.p50loaded).padStart(8),
        fixed(r.cpu, 1).padStart(15),
        ratio(r.cpu, base.cpu).padStart(8),
        r.upstreamCpu.toFixed(1).padStart(20),
        String(r.errors).padStart(7),
      ].join(" "),
    );
  }
  console.log(
    `\nforwarders' own count (answered / failed upstream calls, incl. checks and warm-up): ${Object.entries(stats)
      .map(([name, s]) => `${name} ${s.forwarded}/${s.failed}${s.lastError ? ` (last: ${s.lastError})` : ""}`)
      .join(", ")}`,
  );
  if (summary.some((r) => r.errors > 0) || Object.values(stats).some((s) => s.failed > 0))
    throw new Error("some calls failed: the figures above are not comparable");
}

if (process.argv[2] === "forwarder") {
  const [client, upstreamUrl, port, maxSockets, parent] = process.argv.slice(3);
  if (!CLIENTS.includes(client as ClientName)) throw new Error(`unknown client ${client}`);
  runForwarder(client as ClientName, upstreamUrl!, Number(port), Number(maxSockets), Number(parent));
} else {
  const args = new Map<string, string>();
  for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
  const seconds = Number(args.get("seconds") ?? 5);
  const options = {
    rounds: Number(args.get("rounds") ?? 3),
    seconds,
    connections: Number(args.get("connections") ?? 32),
    latencySeconds: Number(args.get("latency-seconds") ?? Math.max(2, Math.round(seconds / 2))),
  };
  await runBench(() => main(options), children.stopAll);
}
