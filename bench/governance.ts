/**
 * What governance costs the MCP proxy: the same tools/call load through four connector-service processes, in one
 * run, rounds interleaved — audit trail off (the unread streaming path), audit on (the default), audit on with a
 * tool policy on the connector, and the tool policy with the audit trail off — with the ratios to "audit off"
 * printed, and the audit records counted in each service's SQLite file against the messages sent to it.
 *
 *   bun bench/governance.ts [--rounds 5] [--count 20000] [--concurrency 16] [--latency-count 4000]
 *
 * Runs the source (`bun src/index.ts serve`), one process per configuration, each with its own SQLite file in a
 * temporary directory. Every process binds 127.0.0.1 and is stopped at the end (also on an error or Ctrl-C).
 * The load generator is bench/load.ts, given the tool's name (a renamed tool is called by its new name).
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "../test/peers/ports";
import { benchChildren, runBench } from "./children";
import { cpuMs } from "./cpu";

type Result = { count: number; rps: number; p50_ms: number; p90_ms: number; p99_ms: number; failures: number; cpu_us?: number };

const ROOT = resolve(import.meta.dir, "..");
const PASSWORD = "bench-admin-password";
const POLICY = { deny: ["never-called"], rename: { ping: "say" } };
const children = benchChildren();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const waitFor = async (url: string) => {
  for (let i = 0; i < 400; i++) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await Bun.sleep(50);
    }
  }
  throw new Error(`${url} did not come up`);
};
/** Until the service says it is ready (listening comes before the administrator exists). */
const waitReady = async (url: string) => {
  for (let i = 0; i < 600; i++) {
    if ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) }).catch(() => undefined))?.status === 200) return;
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not become ready`);
};
const spawn = (command: string[], options: Parameters<typeof Bun.spawn>[1]) => children.track(Bun.spawn(command, options));

/** One load run in its own process, killed if it takes longer than its count allows (100 calls/s at worst + 30 s). */
async function load(url: string, count: number, concurrency: number, auth: string, tool: string): Promise<Result> {
  const proc = spawn([process.execPath, join(ROOT, "bench/load.ts"), url, String(count), String(concurrency), auth, tool], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000 + count * 10);
  try {
    const out = await new Response(proc.stdout as ReadableStream).text();
    if ((await proc.exited) !== 0)
      throw new Error(`load generator for ${url} failed or timed out (exit ${proc.exitCode ?? proc.signalCode})`);
    return JSON.parse(out);
  } finally {
    clearTimeout(timer);
  }
}

type Config = { name: string; audit: boolean; policy: boolean };
const CONFIGS: Config[] = [
  { name: "audit off", audit: false, policy: false },
  { name: "audit on", audit: true, policy: false },
  { name: "audit on + policy", audit: true, policy: true },
  { name: "policy, audit off", audit: false, policy: true },
];
type Service = Config & { url: string; auth: string; tool: string; pid: number; database: string; sent: number };

async function main(work: string) {
  const args = new Map<string, string>();
  for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
  const ROUNDS = Number(args.get("rounds") ?? 5);
  const COUNT = Number(args.get("count") ?? 20000);
  const CONCURRENCY = Number(args.get("concurrency") ?? 16);
  const LATENCY_COUNT = Number(args.get("latency-count") ?? 4000);
  for (const [name, n] of Object.entries({
    rounds: ROUNDS,
    count: COUNT,
    concurrency: CONCURRENCY,
    "latency-count": LATENCY_COUNT,
  })) {
    if (!Number.isInteger(n) || n < 1 || n > 10_000_000) throw new Error(`--${name} must be a positive integer`);
  }

  const upstreamPort = await freePort();
  spawn([process.execPath, join(ROOT, "bench/upstream.ts"), String(upstreamPort)], { stdout: "ignore", stderr: "inherit" });
  const upstream = `http://127.0.0.1:${upstreamPort}/mcp`;
  await waitFor(upstream);

  // One service per configuration, each with its own database; the request log written at info level as in
  // production (and as bench/proxy.ts runs it), discarded.
  const services: Service[] = [];
  for (const [i, config] of CONFIGS.entries()) {
    const port = await freePort();
    const database = join(work, `cs-${i + 1}.db`);
    const proc = spawn([process.execPath, join(ROOT, "src/index.ts"), "serve"], {
      cwd: work,
      env: {
        PATH: process.env.PATH!,
        SERVER__HOST: "127.0.0.1",
        SERVER__PORT: String(port),
        DATABASE__PATH: database,
        AUTH__ADMIN_PASSWORD: PASSWORD,
        LOG__LEVEL: "info",
        AUDIT__ENABLED: String(config.audit),
      },
      stdout: "ignore",
      stderr: "inherit",
    });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(url);
    const call = async (authorization: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      if (!res.ok) throw new Error(`${config.name}: ${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    // The administrator's password only makes the API token; everything after goes with the token.
    const token = (await call(`Basic ${btoa(`admin:${PASSWORD}`)}`, "POST", "/api/v1/tokens", { name: "bench" })).token as string;
    const auth = `Bearer ${token}`;
    const connector = await call(auth, "POST", "/api/v1/connectors", { url: upstream });
    await call(auth, "POST", `/api/v1/connectors/${connector.id}/connect`, {});
    if (config.policy) {
      const patched = await call(auth, "PATCH", `/api/v1/connectors/${connector.id}`, { tool_policy: POLICY });
      if (JSON.stringify(patched.tool_policy) !== JSON.stringify(POLICY))
        throw new Error(`${config.name}: tool policy not stored: ${JSON.stringify(patched.tool_policy)}`);
    }
    services.push({
      ...config,
      url: `${url}/api/v1/connectors/${connector.id}/mcp`,
      auth,
      tool: config.policy ? "say" : "ping",
      pid: proc.pid,
      database,
      sent: 0,
    });
  }

  // Each configuration answers the way it should: with a policy, "say" reaches the server's "ping", and "ping" is
  // answered by the proxy as an unknown tool (-32602); without one, "ping" is called as it is.
  for (const s of services) {
    const rpc = async (tool: string) => {
      s.sent++;
      const res = await fetch(s.url, {
        method: "POST",
        headers: {
          authorization: s.auth,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: tool, arguments: {} } }),
        signal: AbortSignal.timeout(10_000),
      });
      return { status: res.status, text: await res.text() };
    };
    const own = await rpc(s.tool);
    if (own.status !== 200 || !own.text.includes("pong"))
      throw new Error(`${s.name}: calling ${s.tool}: ${own.status} ${own.text}`);
    if (s.policy) {
      const old = await rpc("ping");
      if (!old.text.includes("-32602")) throw new Error(`${s.name}: the old name still answers: ${old.status} ${old.text}`);
    }
  }

  const run = async (s: Service, count: number, concurrency: number) => {
    s.sent += count;
    return load(s.url, count, concurrency, s.auth, s.tool);
  };
  for (const s of services) await run(s, Math.min(2000, COUNT), CONCURRENCY); // warm-up: JIT, pools, caches
  const throughput: Record<string, Result[]> = {};
  const latency: Record<string, Result[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of services) {
      const before = cpuMs(s.pid);
      const result = await run(s, COUNT, CONCURRENCY);
      // CPU the service itself spent per call: what it costs, however the two cores were shared.
      result.cpu_us = ((cpuMs(s.pid) - before) * 1000) / COUNT;
      (throughput[s.name] ??= []).push(result);
    }
    for (const s of services) (latency[s.name] ??= []).push(await run(s, LATENCY_COUNT, 1));
    process.stderr.write(
      `round ${round + 1}/${ROUNDS}: ${services.map((s) => `${s.name} ${throughput[s.name]!.at(-1)!.rps.toFixed(0)} req/s, p50 c=1 ${latency[s.name]!.at(-1)!.p50_ms.toFixed(3)} ms`).join("; ")}\n`,
    );
  }

  // The audit trail: every message sent to an audit-on service is a row once the writer has flushed (every 250 ms).
  const countRows = (database: string) => {
    const db = new Database(database, { readonly: true });
    try {
      return (db.query("SELECT count(*) AS n FROM audit_records").get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  const recorded: Record<string, number> = {};
  for (const s of services) {
    let rows = countRows(s.database);
    for (const until = Date.now() + 10_000; s.audit && rows < s.sent && Date.now() < until; rows = countRows(s.database))
      await Bun.sleep(250);
    recorded[s.name] = rows;
  }

  const summary = services.map((s) => ({
    name: s.name,
    rps: median(throughput[s.name]!.map((r) => r.rps)),
    p50_c1: median(latency[s.name]!.map((r) => r.p50_ms)),
    p99_c1: median(latency[s.name]!.map((r) => r.p99_ms)),
    p50_loaded: median(throughput[s.name]!.map((r) => r.p50_ms)),
    cpu_us: median(throughput[s.name]!.map((r) => r.cpu_us!)),
    failures: [...throughput[s.name]!, ...latency[s.name]!].reduce((n, r) => n + r.failures, 0),
  }));
  console.log(
    `\nconnector-service governance benchmark: ${ROUNDS} rounds, configurations interleaved, median; throughput at concurrency ${CONCURRENCY} (${COUNT} calls), latency at concurrency 1 (${LATENCY_COUNT} calls)\n`,
  );
  console.log("configuration         req/s   p50 c=1 ms  p99 c=1 ms  p50 loaded ms  proxy CPU us/req  failures");
  for (const r of summary) {
    console.log(
      `${r.name.padEnd(19)} ${r.rps.toFixed(0).padStart(7)}  ${r.p50_c1.toFixed(3).padStart(10)}  ${r.p99_c1.toFixed(3).padStart(10)}  ${r.p50_loaded.toFixed(3).padStart(13)}  ${r.cpu_us.toFixed(1).padStart(16)}  ${r.failures}`,
    );
  }
  const [off, on, both, policy] = summary as [
    (typeof summary)[number],
    (typeof summary)[number],
    (typeof summary)[number],
    (typeof summary)[number],
  ];
  const ratio = (r: (typeof summary)[number], label: string, target = "") =>
    console.log(
      `${label.padEnd(26)} ${(r.rps / off.rps).toFixed(3)}x throughput, ${r.p50_c1 - off.p50_c1 >= 0 ? "+" : ""}${(r.p50_c1 - off.p50_c1).toFixed(3)} ms p50 c=1, ${r.cpu_us - off.cpu_us >= 0 ? "+" : ""}${(r.cpu_us - off.cpu_us).toFixed(1)} us CPU/req${target}`,
    );
  console.log("");
  ratio(on, "audit on / audit off:", "   (target >= 0.9x)");
  ratio(both, "policy + audit / audit off:");
  ratio(policy, "policy / audit off:");
  console.log("");
  for (const s of services) {
    const rows = recorded[s.name]!;
    const expected = s.audit ? s.sent : 0;
    const verdict =
      rows === expected
        ? "records lost: 0"
        : rows < expected
          ? `records lost: ${expected - rows}`
          : `records in excess: ${rows - expected}`;
    console.log(
      `audit rows, ${s.name.padEnd(19)} ${String(rows).padStart(8)} of ${String(expected).padStart(8)} messages sent${s.audit ? "" : " (audit off: none expected)"}  ${verdict}`,
    );
  }
}

{
  const work = mkdtempSync(join(tmpdir(), "cs-bench-governance-"));
  await runBench(
    () => main(work),
    async () => {
      await children.stopAll();
      rmSync(work, { recursive: true, force: true });
    },
  );
}
