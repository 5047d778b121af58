/**
 * Virtual servers against their members, side by side in one run (issue 24's benchmarks):
 * - `tools/list` through a virtual server of 10 members × 50 tools, against the slowest member's own listing through
 *   its proxy URL (target: p50 ≤ that + 2 ms; the members are asked concurrently); each virtual listing is followed by
 *   one member's, in turn, so that noise on the machine falls on both alike (calls likewise, one of each in turn);
 * - `tools/call` through the virtual server against the member's own proxy URL: p50 at one connection (target: ≤ +0.1
 *   ms) and throughput at `--concurrency` with wrk (target ≥ 0.9×), CPU per request of the service;
 * - memory: `--sessions` client sessions each with every member's upstream session open (a call to each member),
 *   the service's RSS before and after, per upstream session (target ≤ 50 KiB).
 *
 *   bun bench/virtual.ts [--rounds 3] [--seconds 4] [--concurrency 32] [--listings 100] [--sessions 1000] [--build PATH]
 *
 * `--build PATH`: run that binary (another build, e.g. the one before a change) instead of this tree's.
 *
 * One service process (the compiled binary when dist/ has it, else from source) on a fresh SQLite database, one bench
 * upstream (bench/upstream.ts, 50 tools) serving the ten members at ten paths; wrk for the loaded figures. Everything
 * binds 127.0.0.1 and is stopped at the end.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, waitForHttp as waitFor } from "../test/peers/ports";
import { benchChildren, runBench } from "./children";
import { cpuMs } from "./cpu";
import { startProxiedService, wrk } from "./proxied";

const ROOT = resolve(import.meta.dir, "..");
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const ROUNDS = Number(args.get("rounds") ?? 3);
const SECONDS = Number(args.get("seconds") ?? 4);
const CONCURRENCY = Number(args.get("concurrency") ?? 32);
const LISTINGS = Number(args.get("listings") ?? 100);
const SESSIONS = Number(args.get("sessions") ?? 1000);
const MEMBERS = 10;
const TOOLS = 50;

const work = mkdtempSync(join(tmpdir(), "cs-virtual-bench-"));
const children = benchChildren();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);

async function main() {
  const upstreamPort = await freePort();
  children.track(
    Bun.spawn([process.execPath, join(ROOT, "bench/upstream.ts"), String(upstreamPort), String(TOOLS)], {
      stdout: "ignore",
      stderr: "inherit",
    }),
  );
  const upstream = `http://127.0.0.1:${upstreamPort}`;
  await waitFor(`${upstream}/m0`);

  const binary = resolve(args.get("build") ?? join(ROOT, "dist/connector-service"));
  const command = existsSync(binary) ? [binary] : [process.execPath, join(ROOT, "src/index.ts")];
  // The first member comes with the service (and its API token); the other nine are added through the API.
  const started = await startProxiedService(command, join(work, "service"), `${upstream}/m0`, {
    VIRTUAL__MAX_SESSIONS_PER_USER: String(SESSIONS + 10),
  });
  children.track(started.proc);
  const origin = new URL(started.url).origin;
  const auth = started.auth;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${origin}${path}`, {
      method,
      headers: { authorization: auth, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  const memberUrls = [started.url];
  const first = started.url.split("/").at(-2)!;
  const ids = [first];
  for (let i = 1; i < MEMBERS; i++) {
    const c = await api("POST", "/api/v1/connectors", { url: `${upstream}/m${i}` });
    await api("POST", `/api/v1/connectors/${c.id}/connect`, {});
    ids.push(c.id);
    memberUrls.push(`${origin}/api/v1/connectors/${c.id}/mcp`);
  }
  const vs = await api("POST", "/api/v1/virtual-servers", {
    name: "bench",
    members: ids.map((id, i) => ({ connector_id: id, prefix: `m${i}` })),
  });
  const vsUrl = vs.mcp_url.replace(/^https?:\/\/[^/]+/, origin) as string;

  let nextId = 1;
  /** One JSON-RPC request; the answer's JSON (the bench upstream and the endpoint answer JSON without progress). */
  async function rpc(url: string, method: string, params: unknown, session?: string) {
    const res = await fetch(url, {
      method: "POST",
      headers: {
        authorization: auth,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        ...(session && { "mcp-session-id": session }),
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
    });
    if (res.status !== 200) throw new Error(`${method} at ${url}: ${res.status} ${await res.text()}`);
    return { body: (await res.json()) as any, session: res.headers.get("mcp-session-id") ?? undefined };
  }
  async function openSession() {
    const opened = await rpc(vsUrl, "initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "bench", version: "1" },
    });
    await fetch(vsUrl, {
      method: "POST",
      headers: {
        authorization: auth,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": opened.session!,
      },
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    });
    return opened.session!;
  }
  /** Milliseconds of `n` sequential calls of `send`, each timed. */
  async function timed(n: number, send: () => Promise<unknown>) {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await send();
      times.push(performance.now() - t0);
    }
    return median(times);
  }

  const session = await openSession();
  const listed = (await rpc(vsUrl, "tools/list", {}, session)).body.result;
  console.log(
    `virtual server: ${MEMBERS} members × ${TOOLS} tools; first page ${listed.tools.length} tools, next cursor ${listed.nextCursor ? "yes" : "no"}`,
  );

  const rounds: { slowestMember: number; virtualList: number; memberCall: number; virtualCall: number }[] = [];
  const loaded: { member: number; virtual: number; memberCpu: number; virtualCpu: number }[] = [];
  const callBody = (name: string) =>
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: {} } });
  for (let round = 0; round < ROUNDS; round++) {
    // Side by side, one after the other: a stretch of noise on the machine falls on both alike.
    const memberLists: number[][] = memberUrls.map(() => []);
    const virtualLists: number[] = [];
    for (let i = 0; i < LISTINGS; i++) {
      virtualLists.push(await timed(1, () => rpc(vsUrl, "tools/list", {}, session)));
      const m = i % MEMBERS;
      memberLists[m]!.push(await timed(1, () => rpc(memberUrls[m]!, "tools/list", {})));
    }
    const memberCalls: number[] = [];
    const virtualCalls: number[] = [];
    for (let i = 0; i < LISTINGS * 5; i++) {
      memberCalls.push(await timed(1, () => rpc(memberUrls[0]!, "tools/call", { name: "ping", arguments: {} })));
      virtualCalls.push(await timed(1, () => rpc(vsUrl, "tools/call", { name: "m0__ping", arguments: {} }, session)));
    }
    rounds.push({
      slowestMember: Math.max(...memberLists.map(median)),
      virtualList: median(virtualLists),
      memberCall: median(memberCalls),
      virtualCall: median(virtualCalls),
    });

    const cpu0 = cpuMs(started.proc.pid);
    const m = await wrk(memberUrls[0]!, CONCURRENCY, SECONDS, auth);
    const cpu1 = cpuMs(started.proc.pid);
    const v = await wrk(vsUrl, CONCURRENCY, SECONDS, auth, { body: callBody("m0__ping"), session });
    const cpu2 = cpuMs(started.proc.pid);
    if (m.failures || v.failures) console.log(`round ${round}: failures member ${m.failures}, virtual ${v.failures}`);
    loaded.push({
      member: m.rps,
      virtual: v.rps,
      memberCpu: ((cpu1 - cpu0) * 1000) / m.count,
      virtualCpu: ((cpu2 - cpu1) * 1000) / v.count,
    });
  }
  const med = <T>(rows: T[], key: keyof T) => median(rows.map((r) => r[key] as number));
  const slowest = med(rounds, "slowestMember");
  const vList = med(rounds, "virtualList");
  const mCall = med(rounds, "memberCall");
  const vCall = med(rounds, "virtualCall");
  console.log(`\nmedians of ${ROUNDS} rounds`);
  console.log(
    `tools/list p50: virtual server ${vList.toFixed(2)} ms, slowest member's own ${slowest.toFixed(2)} ms: +${(vList - slowest).toFixed(2)} ms (target <= +2)`,
  );
  console.log(
    `tools/call p50 at c=1: virtual ${vCall.toFixed(3)} ms, member's proxy URL ${mCall.toFixed(3)} ms: ${vCall - mCall >= 0 ? "+" : ""}${(vCall - mCall).toFixed(3)} ms (target <= +0.1)`,
  );
  const mRps = med(loaded, "member");
  const vRps = med(loaded, "virtual");
  console.log(
    `tools/call at c=${CONCURRENCY}: virtual ${vRps.toFixed(0)} req/s, member ${mRps.toFixed(0)} req/s: ${(vRps / mRps).toFixed(3)}x (target >= 0.9); CPU per request ${med(loaded, "virtualCpu").toFixed(1)} vs ${med(loaded, "memberCpu").toFixed(1)} µs`,
  );

  // Memory: SESSIONS client sessions, each with all ten upstream sessions open.
  await Bun.sleep(1000);
  const before = rssKiB(started.proc.pid);
  const t0 = performance.now();
  let opened = 0;
  const worker = async () => {
    while (opened < SESSIONS) {
      opened++;
      const s = await openSession();
      for (let i = 0; i < MEMBERS; i++) await rpc(vsUrl, "tools/call", { name: `m${i}__ping`, arguments: {} }, s);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await Bun.sleep(2000);
  const after = rssKiB(started.proc.pid);
  console.log(
    `memory: ${SESSIONS} client sessions × ${MEMBERS} upstream sessions opened in ${((performance.now() - t0) / 1000).toFixed(1)} s; RSS ${before} → ${after} KiB: ${((after - before) / SESSIONS).toFixed(1)} KiB per client session, ${((after - before) / (SESSIONS * MEMBERS)).toFixed(1)} KiB per upstream session (target <= 50)`,
  );
}

await runBench(main, async () => {
  await children.stopAll();
  rmSync(work, { recursive: true, force: true });
});
