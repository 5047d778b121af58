/**
 * MCP proxy benchmark: the same tools/call load against the upstream directly, through nginx (a reference
 * reverse proxy) and through connector-service, in one run on loopback, with the ratios printed.
 *
 *   bun bench/proxy.ts [--rounds 3] [--count 20000] [--concurrency 16] [--latency-count 4000] [--generator bun|wrk] [--seconds 10]
 *                      [--also "name:SETTING=value,SETTING=value;name:…"] [--builds "name:path;name:path"]
 *                      [--rate-limits 1000000] [--tool ping|ping-stream]
 *
 * `--generator wrk` drives the load with Debian's `wrk` (bench/wrk-post.lua: the same POST and Bearer header) for
 * `--seconds` per target and round, one thread, `--concurrency` connections; latency at concurrency 1 as well.
 * `--also` adds service processes with other settings, side by side with the default ones (an A/B in one run), e.g.
 * `--also "checkpoints in commits:DATABASE__CHECKPOINT_THREAD=false"`. `--builds` adds service processes of other
 * builds (binaries), with the default settings, side by side with this one: a change measured against the build before
 * it in one run, e.g. `--builds "before:/tmp/connector-service-before"`.
 *
 * `--tool ping-stream`: every target's call is answered on an event stream (the MCP SDK's servers' default), not JSON.
 *
 * `--rate-limits N` adds a service whose every request goes through rate limits never reached: the user's
 * (RATE__USER_REQUESTS_PER_MINUTE=N), the connector's and the called tool's (`rate_limits` of N a minute, a full
 * bucket holding N: keep N well above the calls of a run), and prints what they add to the proxy's CPU per request
 * against the default service (target: at most 2 us).
 *
 * Needs nginx on PATH (Debian: apt-get install nginx-light). Uses dist/connector-service when built,
 * else runs the source with Bun. Every process binds 127.0.0.1 and is stopped at the end.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, waitForHttp as waitFor } from "../test/peers/ports";
import { settingsFrom } from "./children";
import { cpuMs } from "./cpu";
import { startProxiedService, wrk as runWrk } from "./proxied";

const ROOT = resolve(import.meta.dir, "..");
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const ROUNDS = Number(args.get("rounds") ?? 3);
const COUNT = Number(args.get("count") ?? 20000);
const CONCURRENCY = Number(args.get("concurrency") ?? 16);
const LATENCY_COUNT = Number(args.get("latency-count") ?? 4000);
const GENERATOR = args.get("generator") ?? "bun";
const SECONDS = Number(args.get("seconds") ?? 10);
/** The tool called: `ping` (a JSON answer) or `ping-stream` (the answer on an event stream, as the SDK's servers answer). */
const TOOL = args.get("tool") ?? "ping";
const TOOL_BODY = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: TOOL, arguments: {} } });
/** `name:SETTING=value,…` entries, `;`-separated: more services to run beside the default ones. */
const ALSO = (args.get("also") ?? "")
  .split(";")
  .filter(Boolean)
  .map((entry) => {
    const [name, settings = ""] = entry.split(/:(.*)/s);
    return { name: name!.trim(), env: settingsFrom(settings) };
  });
/** `name:path` entries, `;`-separated: service processes of other builds (binaries), with the default settings. */
/** Requests a minute of the rate-limited service's limits (user, connector, tool); undefined: no such service. */
const RATE_LIMITS = args.has("rate-limits") ? Number(args.get("rate-limits")) : undefined;
const BUILDS = (args.get("builds") ?? "")
  .split(";")
  .filter(Boolean)
  .map((entry) => {
    const [name, path = ""] = entry.split(/:(.*)/s);
    return { name: name!.trim(), command: [resolve(path.trim())] };
  });

const RATE_LIMITED = "cs, rate limit set";

const work = mkdtempSync(join(tmpdir(), "cs-bench-"));
const children: Bun.Subprocess[] = [];

async function main() {
  const [upstreamPort, nginxPort, barePort, heldPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  children.push(
    Bun.spawn([process.execPath, join(ROOT, "bench/upstream.ts"), String(upstreamPort)], { stdout: "ignore", stderr: "inherit" }),
  );
  const upstream = `http://127.0.0.1:${upstreamPort}/mcp`;
  await waitFor(upstream);

  // nginx: one worker (the service is one event loop too), keep-alive to the upstream, no buffering.
  writeFileSync(
    join(work, "nginx.conf"),
    `worker_processes 1;
pid ${work}/nginx.pid;
error_log ${work}/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  upstream mcp { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${nginxPort};
    location / {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`,
  );
  const nginx = Bun.spawn(["nginx", "-p", work, "-c", join(work, "nginx.conf"), "-g", "daemon off;"], {
    stdout: "ignore",
    stderr: "inherit",
  });
  children.push(nginx);
  await waitFor(`http://127.0.0.1:${nginxPort}/mcp`);

  const bare = Bun.spawn([process.execPath, join(ROOT, "bench/bare-proxy.ts"), upstream, String(barePort)], {
    stdout: "ignore",
    stderr: "inherit",
  });
  children.push(bare);
  await waitFor(`http://127.0.0.1:${barePort}/mcp`);
  const heldBare = Bun.spawn([process.execPath, join(ROOT, "bench/bare-proxy.ts"), upstream, String(heldPort), "held"], {
    stdout: "ignore",
    stderr: "inherit",
  });
  children.push(heldBare);
  await waitFor(`http://127.0.0.1:${heldPort}/mcp`);

  const binary = join(ROOT, "dist/connector-service");
  const command = existsSync(binary) ? [binary] : [process.execPath, join(ROOT, "src/index.ts")];
  /** A service process on its own database, a connector to the upstream and an API token; `env` on top of the defaults. */
  async function startService(name: string, env: Record<string, string>, run = command, connector: Record<string, unknown> = {}) {
    const started = await startProxiedService(run, join(work, name), upstream, env, connector);
    children.push(started.proc);
    return { name, url: started.url, auth: started.auth, pid: started.proc.pid };
  }
  // As deployed by default (audit trail on), and without the audit trail (AUDIT__ENABLED=false): what it costs here.
  const serviceTargets = [
    await startService("connector-service", {}),
    await startService("cs, audit off", { AUDIT__ENABLED: "false" }),
  ];
  for (const { name, env } of ALSO) serviceTargets.push(await startService(name, env));
  if (RATE_LIMITS !== undefined) {
    // The tool bench/load.ts calls (`ping`) has a limit of its own: the request takes from three buckets.
    const limits = { requests_per_minute: RATE_LIMITS, tools: { ping: RATE_LIMITS } };
    const env = { RATE__USER_REQUESTS_PER_MINUTE: String(RATE_LIMITS) };
    serviceTargets.push(await startService(RATE_LIMITED, env, command, { rate_limits: limits }));
  }
  for (const build of BUILDS) serviceTargets.push(await startService(build.name, {}, build.command));

  const targets = [
    { name: "direct", url: upstream, auth: undefined, pid: undefined },
    { name: "nginx", url: `http://127.0.0.1:${nginxPort}/mcp`, auth: undefined, pid: nginx.pid },
    { name: "bare Bun proxy", url: `http://127.0.0.1:${barePort}/mcp`, auth: undefined, pid: bare.pid },
    { name: "bare, held", url: `http://127.0.0.1:${heldPort}/mcp`, auth: undefined, pid: heldBare.pid },
    ...serviceTargets,
  ];
  type Result = { rps: number; p50_ms: number; p90_ms: number; p99_ms: number; failures: number; cpu_us?: number };
  /** wrk for `SECONDS` (count is not used: wrk runs for a time). */
  const wrk = (url: string, concurrency: number, auth?: string, seconds = SECONDS): Promise<Result & { count: number }> =>
    runWrk(url, concurrency, seconds, auth, TOOL === "ping" ? undefined : { body: TOOL_BODY });
  const load = async (url: string, count: number, concurrency: number, auth?: string): Promise<Result> => {
    if (GENERATOR === "wrk")
      return wrk(url, concurrency, auth, concurrency === 1 ? Math.max(2, Math.round(SECONDS / 2)) : SECONDS);
    const proc = Bun.spawn(
      [process.execPath, join(ROOT, "bench/load.ts"), url, String(count), String(concurrency), auth ?? "", TOOL],
      {
        stdout: "pipe",
        stderr: "inherit",
      },
    );
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    return JSON.parse(out);
  };

  for (const t of targets)
    await (GENERATOR === "wrk" ? wrk(t.url, CONCURRENCY, t.auth, 2) : load(t.url, 2000, CONCURRENCY, t.auth)); // warm-up: JIT, pools, caches
  const throughput: Record<string, Result[]> = {};
  const latency: Record<string, Result[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of targets) {
      const cpuBefore = t.pid ? cpuMs(t.pid) : 0;
      const result = await load(t.url, COUNT, CONCURRENCY, t.auth);
      // CPU the proxy itself spent per request: what it adds, independent of how the cores were shared.
      const done = "count" in result ? (result as { count: number }).count : COUNT;
      if (t.pid) result.cpu_us = ((cpuMs(t.pid) - cpuBefore) * 1000) / done;
      (throughput[t.name] ??= []).push(result);
      (latency[t.name] ??= []).push(await load(t.url, LATENCY_COUNT, 1, t.auth));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const summary = Object.fromEntries(
    targets.map((t) => [
      t.name,
      {
        rps: median(throughput[t.name]!.map((r) => r.rps)),
        p50_ms_c1: median(latency[t.name]!.map((r) => r.p50_ms)),
        p99_ms_c1: median(latency[t.name]!.map((r) => r.p99_ms)),
        p50_ms_loaded: median(throughput[t.name]!.map((r) => r.p50_ms)),
        failures: [...throughput[t.name]!, ...latency[t.name]!].reduce((n, r) => n + r.failures, 0),
        cpu_us: t.pid ? median(throughput[t.name]!.map((r) => r.cpu_us!)) : undefined,
      },
    ]),
  );
  const s = summary as Record<
    string,
    { rps: number; p50_ms_c1: number; p99_ms_c1: number; p50_ms_loaded: number; failures: number; cpu_us?: number }
  >;
  const how =
    GENERATOR === "wrk"
      ? `wrk, ${SECONDS} s per target and round`
      : `${COUNT} calls; latency at concurrency 1: ${LATENCY_COUNT} calls`;
  console.log(
    `\nconnector-service MCP proxy benchmark: ${ROUNDS} rounds, median; throughput at concurrency ${CONCURRENCY} (${how})\n`,
  );
  console.log("target              req/s     p50 c=1 ms  p99 c=1 ms  p50 loaded ms  proxy CPU us/req  failures");
  for (const [name, r] of Object.entries(s)) {
    console.log(
      `${name.padEnd(18)} ${r.rps.toFixed(0).padStart(7)}  ${r.p50_ms_c1.toFixed(3).padStart(10)}  ${r.p99_ms_c1.toFixed(3).padStart(10)}  ${r.p50_ms_loaded.toFixed(3).padStart(13)}  ${(r.cpu_us === undefined ? "-" : r.cpu_us.toFixed(1)).padStart(16)}  ${r.failures}`,
    );
  }
  const cs = s["connector-service"]!;
  console.log(`\nthroughput vs direct: ${(cs.rps / s.direct!.rps).toFixed(3)}x   (target >= 0.9)`);
  console.log(`throughput vs nginx:  ${(cs.rps / s.nginx!.rps).toFixed(3)}x   (target >= 1.0)`);
  console.log(
    `p50 added latency at c=1: ${(cs.p50_ms_c1 - s.direct!.p50_ms_c1).toFixed(3)} ms   (target <= 0.3); nginx adds ${(s.nginx!.p50_ms_c1 - s.direct!.p50_ms_c1).toFixed(3)} ms`,
  );
  const floor = s["bare Bun proxy"]!;
  console.log(
    `bare Bun proxy (the runtime's floor): ${(floor.rps / s.direct!.rps).toFixed(3)}x direct, ${(floor.rps / s.nginx!.rps).toFixed(3)}x nginx, adds ${(floor.p50_ms_c1 - s.direct!.p50_ms_c1).toFixed(3)} ms`,
  );
  const heldFloor = s["bare, held"]!;
  console.log(
    `bare, held (reads both bodies whole) / bare Bun proxy: ${(heldFloor.rps / floor.rps).toFixed(3)}x throughput, ${(heldFloor.cpu_us! / floor.cpu_us!).toFixed(2)}x CPU per request`,
  );
  const limited = s[RATE_LIMITED];
  if (limited) {
    const added = limited.cpu_us! - cs.cpu_us!;
    console.log(
      `rate limits set, never reached (user, connector, tool: ${RATE_LIMITS} a minute): ${added >= 0 ? "+" : ""}${added.toFixed(2)} us proxy CPU per request (target <= +2), ${(limited.rps / cs.rps).toFixed(3)}x throughput, ${limited.p50_ms_c1 - cs.p50_ms_c1 >= 0 ? "+" : ""}${(limited.p50_ms_c1 - cs.p50_ms_c1).toFixed(3)} ms p50 at c=1`,
    );
  }
  for (const t of serviceTargets) {
    const r = s[t.name]!;
    console.log(
      `${t.name} / bare, held: ${(r.rps / heldFloor.rps).toFixed(3)}x throughput, ${(r.cpu_us! / heldFloor.cpu_us!).toFixed(2)}x CPU per request`,
    );
    console.log(
      `${t.name} / bare Bun proxy: ${(r.rps / floor.rps).toFixed(3)}x throughput (target >= 0.9), ${r.p50_ms_c1 - floor.p50_ms_c1 >= 0 ? "+" : ""}${(r.p50_ms_c1 - floor.p50_ms_c1).toFixed(3)} ms p50 at c=1 (target <= +0.05), ${(r.cpu_us! / floor.cpu_us!).toFixed(2)}x CPU per request`,
    );
  }
}

try {
  await main();
} finally {
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(children.map((c) => c.exited));
  rmSync(work, { recursive: true, force: true });
}
