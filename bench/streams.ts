/**
 * Streams at scale: `--streams` event streams open at once through one connector-service process — half GET
 * notification streams, half POSTed tool calls answered with event streams — then closed. Measures the service's RSS
 * (before, peak sampled every 100 ms, after), each event's latency (client receive time − upstream send time, both
 * `performance.timeOrigin + performance.now()` on the same machine), and whether closing clients frees the service's
 * upstream streams (the upstream's open-stream counter and the service's TCP sockets, before / peak / after).
 *
 *   bun bench/streams.ts [--streams 1000] [--events 20] [--interval-ms 200] [--batch 100] [--rounds 1] [--idle-ms 3000] [--direct false]
 *                        [--settings "SETTING=value,…"]
 *
 * `--idle-ms` (3000): idle time before the baseline and after each round, before "after" is read. `--settings` adds
 * settings of the service (e.g. DATABASE__CHECKPOINT_THREAD=false).
 * `--rounds N` repeats the open-all / close-all phase N times in the same service process (RSS after each round:
 * does it keep growing?). `--direct true` adds a round with the clients on the upstream itself, no proxy: the latency
 * the bench's own processes account for.
 *
 * Runs the service as deployed, dist/connector-service, when it is built (`npm run build`), else the source (`bun
 * src/index.ts serve`: ~15 MB more memory at rest), with LOG__LEVEL=warn (no line per request in the measurement). The
 * upstream runs in a child process of its own (`--role upstream`) so that its timers do not share an event loop with
 * the clients that time the events. Everything binds 127.0.0.1; children are stopped at the end, also on error.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { settingsFrom } from "./children";

const ROOT = resolve(import.meta.dir, "..");
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const STREAMS = Number(args.get("streams") ?? 1000);
const EVENTS = Number(args.get("events") ?? 20);
const INTERVAL_MS = Number(args.get("interval-ms") ?? 200);
const BATCH = Number(args.get("batch") ?? 100);
const ROUNDS = Number(args.get("rounds") ?? 1);
/** Idle time before the baseline and after each round, before "after" RSS is read. */
const IDLE_MS = Number(args.get("idle-ms") ?? 3000);
/** `--direct true`: one more round with the clients straight on the upstream — the floor of the bench's own latency. */
const DIRECT = args.get("direct") === "true";
/** `--settings "SETTING=value,…"`: the service's settings beyond the bench's own (e.g. DATABASE__CHECKPOINT_THREAD=false). */
const SETTINGS = settingsFrom(args.get("settings") ?? "");
const PASSWORD = "streams-admin-password";
const now = () => performance.timeOrigin + performance.now();
const encoder = new TextEncoder();

// ---------------------------------------------------------------------------------------------------- the upstream
/** An MCP upstream: initialize answered as JSON; other POSTs (tool calls) as event streams of EVENTS timestamped
 * events, then the result; GETs as notification streams of timestamped events until the client goes away. */
function runUpstream() {
  let open = 0;
  let peak = 0;
  let opened = 0;
  const stream = (kind: "get" | "post", id: number | string | undefined) => {
    let timer: ReturnType<typeof setInterval> | undefined;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      open--;
    };
    return new ReadableStream({
      start(controller) {
        open++;
        opened++;
        peak = Math.max(peak, open);
        controller.enqueue(encoder.encode(": open\n\n"));
        let n = 0;
        timer = setInterval(() => {
          if (closed) return;
          try {
            n++;
            controller.enqueue(
              encoder.encode(
                `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"n":${n},"t":${now()}}}}\n\n`,
              ),
            );
            if (kind === "post" && n >= EVENTS) {
              controller.enqueue(
                encoder.encode(
                  `data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"done"}],"isError":false}}\n\n`,
                ),
              );
              close();
              controller.close();
            }
          } catch {
            close(); // the client went away between two events
          }
        }, INTERVAL_MS);
      },
      cancel: close,
    });
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/__stats") return Response.json({ open, peak, opened });
      if (path === "/__now") return Response.json({ t: now() });
      if (path === "/__reset-peak") return Response.json({ peak: (peak = open) });
      if (request.method === "GET")
        return new Response(stream("get", undefined), {
          headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
        });
      if (request.method === "DELETE") return new Response(null, { status: 200 });
      const message = (await request.json()) as { id?: number | string; method: string };
      if (message.id === undefined) return new Response(null, { status: 202 });
      if (message.method === "initialize") {
        return Response.json({
          jsonrpc: "2.0",
          id: message.id,
          result: {
            protocolVersion: "2025-11-25",
            capabilities: { tools: {} },
            serverInfo: { name: "streams-upstream", version: "1" },
          },
        });
      }
      return new Response(stream("post", message.id), {
        headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
      });
    },
  });
  console.log(JSON.stringify({ port: server.port }));
}

// ---------------------------------------------------------------------------------------------------- measurements
const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
const mib = (kib: number) => (kib / 1024).toFixed(1);
/** The target is 150 MB: decimal megabytes (10⁶ bytes), the stricter reading (150 MB = 143.1 MiB). */
const mb = (kib: number) => ((kib * 1024) / 1e6).toFixed(1);

/** The process's TCP sockets, split by their peer: to the upstream's port, from clients on the service's port, other. */
function sockets(pid: number, servicePort: number, upstreamPort: number) {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const counts = { total: inodes.size, upstream: 0, clients: 0, listening: 0, other: 0 };
  for (const file of ["tcp", "tcp6"]) {
    let text = "";
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9]!)) continue;
      const local = parseInt(f[1]!.split(":")[1]!, 16);
      const remote = parseInt(f[2]!.split(":")[1]!, 16);
      if (f[3] === "0A") counts.listening++;
      else if (remote === upstreamPort) counts.upstream++;
      else if (local === servicePort) counts.clients++;
      else counts.other++;
    }
  }
  return counts;
}
const percentile = (sorted: Float64Array | number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]! : NaN;

async function withTimeout<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function readLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const chunk = await reader.read();
    if (chunk.done) break;
    text += new TextDecoder().decode(chunk.value);
  }
  reader.releaseLock();
  return text;
}

// ---------------------------------------------------------------------------------------------------- the bench
async function main() {
  const work = mkdtempSync(join(tmpdir(), "cs-streams-"));
  const children: { kill(signal?: number | NodeJS.Signals): void; exited: Promise<number> }[] = [];
  const cleanup = async () => {
    for (const child of children) child.kill("SIGTERM");
    await Promise.race([Promise.all(children.map((c) => c.exited)), Bun.sleep(8000)]);
    for (const child of children) child.kill("SIGKILL");
    rmSync(work, { recursive: true, force: true });
  };
  try {
    await run(work, children);
  } finally {
    await cleanup();
  }
}

async function run(work: string, children: { kill(signal?: number | NodeJS.Signals): void; exited: Promise<number> }[]) {
  console.log(
    `load: ${readFileSync("/proc/loadavg", "utf8").trim()}; streams ${STREAMS} (${Math.ceil(STREAMS / 2)} GET, ${Math.floor(STREAMS / 2)} tool calls), events ${EVENTS} per tool call every ${INTERVAL_MS} ms`,
  );

  // The upstream, a child process of its own.
  const upstreamChild = Bun.spawn(
    [process.execPath, import.meta.path, "--role", "upstream", "--events", String(EVENTS), "--interval-ms", String(INTERVAL_MS)],
    {
      env: { ...process.env },
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  children.push(upstreamChild);
  const upstreamPort = JSON.parse(await withTimeout("upstream start", 10_000, readLine(upstreamChild.stdout))).port as number;
  const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;
  const stats = async () =>
    (await (await fetch(`${upstreamUrl}/__stats`)).json()) as { open: number; peak: number; opened: number };

  // The service: a free port chosen here (LOG__LEVEL=warn hides the "listening" line), SQLite in a temp dir.
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const servicePort = probe.port!;
  probe.stop(true);
  const binary = join(ROOT, "dist/connector-service");
  const command = existsSync(binary) ? [binary, "serve"] : [process.execPath, join(ROOT, "src/index.ts"), "serve"];
  console.log(`service: ${existsSync(binary) ? "dist/connector-service" : "the source"}`);
  const service = Bun.spawn(command, {
    cwd: work,
    env: {
      PATH: process.env.PATH!,
      HOME: work,
      DATABASE__PATH: join(work, "cs.db"),
      SERVER__HOST: "127.0.0.1",
      SERVER__PORT: String(servicePort),
      AUTH__ADMIN_PASSWORD: PASSWORD,
      LOG__LEVEL: "warn",
      PROXY__MAX_STREAMS_PER_USER: "100000",
      PROXY__MAX_STREAMS_PER_CONNECTOR: "100000",
      ...SETTINGS,
    },
    stdout: "inherit",
    stderr: "inherit",
  });
  children.push(service);
  const url = `http://127.0.0.1:${servicePort}`;
  await withTimeout(
    "service start",
    30_000,
    (async () => {
      for (;;) {
        if (service.exitCode !== null) throw new Error(`the service ended (${service.exitCode})`);
        const ok = await fetch(`${url}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) return;
        await Bun.sleep(50);
      }
    })(),
  );

  let auth = `Basic ${btoa(`admin:${PASSWORD}`)}`;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await withTimeout(
      `${method} ${path}`,
      20_000,
      fetch(`${url}${path}`, {
        method,
        headers: { authorization: auth, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
  };
  auth = `Bearer ${(await api("POST", "/api/v1/tokens", { name: "streams" })).body.token}`;
  const connector = (await api("POST", "/api/v1/connectors", { url: `${upstreamUrl}/mcp` })).body.id as string;
  const connected = await api("POST", `/api/v1/connectors/${connector}/connect`, {});
  if (connected.body?.state !== "connected") throw new Error(`connect failed: ${JSON.stringify(connected.body)}`);
  const mcp = `${url}/api/v1/connectors/${connector}/mcp`;

  // The two clocks (same machine): the upstream's time against the midpoint of the fastest of 20 round trips.
  let offset = 0;
  let bestRtt = Infinity;
  for (let i = 0; i < 20; i++) {
    const t0 = now();
    const { t } = (await (await fetch(`${upstreamUrl}/__now`)).json()) as { t: number };
    const t1 = now();
    if (t1 - t0 < bestRtt) [bestRtt, offset] = [t1 - t0, t - (t0 + t1) / 2];
  }
  console.log(
    `clock check: upstream − client = ${offset.toFixed(3)} ms (round trip ${bestRtt.toFixed(3)} ms); latencies are not corrected`,
  );

  // Baseline after 3 s idle (the set-up's password hashing is not the baseline).
  await Bun.sleep(IDLE_MS);
  const headers = { authorization: auth };
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`\n— round ${round} of ${ROUNDS}, through the proxy`);
    await phase(mcp, headers);
  }
  if (DIRECT) {
    console.log(`\n— direct: the clients on the upstream, no proxy (the service idles; its figures are not the point)`);
    await phase(`${upstreamUrl}/mcp`, {});
  }

  async function phase(target: string, auth: Record<string, string>) {
    const before = {
      rss: rssKiB(service.pid),
      sockets: sockets(service.pid, servicePort, upstreamPort),
      upstream: await stats(),
    };

    let peakRss = before.rss;
    const sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, rssKiB(service.pid));
      } catch {
        // ended
      }
    }, 100);

    // The clients.
    const latencies: number[] = [];
    const byKind = { get: [] as number[], post: [] as number[] };
    const counts = { opened: 0, failed: 0, statuses: new Map<number, number>(), toolCallsDone: 0, getEvents: 0, postEvents: 0 };
    const gets: AbortController[] = [];
    const readers: Promise<void>[] = [];
    const decoder = new TextDecoder();
    const consume = async (res: Response, kind: "get" | "post") => {
      const reader = res.body!.getReader();
      let buffer = "";
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        const received = now();
        buffer += decoder.decode(chunk.value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const m = /"t":([0-9.]+)/.exec(event);
          if (m) {
            latencies.push(received - Number(m[1]));
            byKind[kind].push(received - Number(m[1]));
            if (kind === "get") counts.getEvents++;
            else counts.postEvents++;
          }
        }
      }
      if (kind === "post") counts.toolCallsDone++;
    };
    const open = async (i: number) => {
      const kind = i % 2 === 0 ? "get" : "post";
      const controller = new AbortController();
      if (kind === "get") gets.push(controller);
      try {
        const res = await withTimeout(
          "stream headers",
          30_000,
          kind === "get"
            ? fetch(target, { headers: { ...auth, accept: "text/event-stream" }, signal: controller.signal })
            : fetch(target, {
                method: "POST",
                headers: { ...auth, "content-type": "application/json", accept: "application/json, text/event-stream" },
                body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "slow", arguments: {} } }),
                signal: controller.signal,
              }),
        );
        counts.statuses.set(res.status, (counts.statuses.get(res.status) ?? 0) + 1);
        if (res.status !== 200) {
          counts.failed++;
          await res.arrayBuffer();
          return;
        }
        counts.opened++;
        readers.push(consume(res, kind).catch(() => undefined));
      } catch {
        counts.failed++;
        controller.abort();
      }
    };
    const rampStart = performance.now();
    for (let i = 0; i < STREAMS; i += BATCH) {
      await Promise.all(Array.from({ length: Math.min(BATCH, STREAMS - i) }, (_, j) => open(i + j)));
    }
    const rampMs = performance.now() - rampStart;
    // All are open: sockets and the upstream's counter now (peak), while tool calls still run.
    await Bun.sleep(Math.min(500, INTERVAL_MS * 2));
    const peak = { sockets: sockets(service.pid, servicePort, upstreamPort), upstream: await stats() };
    console.log(
      `ramp: ${counts.opened} streams open in ${rampMs.toFixed(0)} ms (${counts.failed} failed; statuses ${JSON.stringify([...counts.statuses])})`,
    );
    console.log(
      `all open: upstream open streams ${peak.upstream.open} (peak ${peak.upstream.peak}), service sockets ${JSON.stringify(peak.sockets)}, RSS ${mib(rssKiB(service.pid))} MiB`,
    );

    // Tool calls end by themselves; then the GET streams are cancelled by their clients.
    await withTimeout(
      "tool calls to end",
      EVENTS * INTERVAL_MS + 30_000,
      (async () => {
        while (counts.toolCallsDone < Math.floor(STREAMS / 2) - (counts.failed > 0 ? counts.failed : 0)) await Bun.sleep(50);
      })(),
    ).catch((e) => console.log(`warning: ${(e as Error).message} (${counts.toolCallsDone} done)`));
    await Bun.sleep(INTERVAL_MS * 2); // GET streams go on a little on their own
    const getsOpenBeforeClose = (await stats()).open;
    const closeAt = performance.now();
    for (const controller of gets) controller.abort();
    await Promise.race([Promise.all(readers), Bun.sleep(10_000)]);
    clearInterval(sampler);

    // After: poll until the upstream's open streams are back to the baseline (up to 10 s).
    let after = { sockets: sockets(service.pid, servicePort, upstreamPort), upstream: await stats() };
    let freedMs = NaN;
    for (const deadline = performance.now() + 10_000; performance.now() < deadline;) {
      after = { sockets: sockets(service.pid, servicePort, upstreamPort), upstream: await stats() };
      if (after.upstream.open <= before.upstream.open) {
        freedMs = performance.now() - closeAt;
        break;
      }
      await Bun.sleep(100);
    }
    await Bun.sleep(IDLE_MS); // then idle, as for the baseline
    const afterIdle = {
      rss: rssKiB(service.pid),
      sockets: sockets(service.pid, servicePort, upstreamPort),
      upstream: await stats(),
    };

    const sorted = Float64Array.from(latencies).sort();
    const pct = (xs: number[], p: number) => percentile(Float64Array.from(xs).sort(), p).toFixed(2);
    const fmt = (s: ReturnType<typeof sockets>) =>
      `${s.total} sockets (to upstream ${s.upstream}, from clients ${s.clients}, listening ${s.listening}, other ${s.other})`;
    console.log(`
streams: ${counts.opened} opened of ${STREAMS} (${counts.failed} failed), ramp ${rampMs.toFixed(0)} ms in batches of ${BATCH}; tool calls completed ${counts.toolCallsDone}
events: ${latencies.length} (GET ${counts.getEvents}, tool calls ${counts.postEvents}; expected from tool calls ${Math.floor(STREAMS / 2) * EVENTS})
event latency (client receive − upstream send): p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms, max ${(sorted[sorted.length - 1] ?? NaN).toFixed(2)} ms
  by kind: GET p50 ${pct(byKind.get, 50)} / p99 ${pct(byKind.get, 99)} ms, tool calls p50 ${pct(byKind.post, 50)} / p99 ${pct(byKind.post, 99)} ms
service RSS: before ${mib(before.rss)} MiB, peak ${mib(peakRss)} MiB (${mb(peakRss)} MB), after (${IDLE_MS / 1000} s idle) ${mib(afterIdle.rss)} MiB
upstream open streams: before ${before.upstream.open}, peak ${peak.upstream.peak}, GETs still open before the clients closed ${getsOpenBeforeClose}, after ${after.upstream.open} (back to baseline in ${Number.isNaN(freedMs) ? "— not within 10 s" : `${freedMs.toFixed(0)} ms`}), after idle ${afterIdle.upstream.open}; opened in all ${afterIdle.upstream.opened}
service sockets: before ${fmt(before.sockets)}
                 all open ${fmt(peak.sockets)}
                 after ${fmt(after.sockets)}
                 after idle ${fmt(afterIdle.sockets)}
targets: RSS ≤ 150 MB (10⁶ bytes) ${peakRss * 1024 <= 150e6 ? "met" : "NOT met"}; p99 ≤ 5 ms ${percentile(sorted, 99) <= 5 ? "met" : "NOT met"}; upstream streams freed ${Number.isNaN(freedMs) ? "NOT met" : "met"}`);
  }
}

if (args.get("role") === "upstream") {
  runUpstream();
} else if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
  // The clients' own fetch runs 256 requests at once unless raised at start (as the service does for itself).
  process.execve!(process.execPath, [process.execPath, ...process.argv.slice(1)], {
    ...process.env,
    BUN_CONFIG_MAX_HTTP_REQUESTS: "8192",
  });
} else {
  await main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
