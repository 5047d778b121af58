/**
 * The two stores side by side: the same MCP proxy load through one replica on SQLite and one on PostgreSQL (with the
 * upstream directly as the baseline), then listing 10,000 connectors on each.
 *
 *   bun bench/stores.ts [--rounds 3] [--count 20000] [--concurrency 16] [--connectors 10000] [--lists 300]
 *
 * Starts its own PostgreSQL (Debian's postgresql programs, as the tests do; fsync off, as a throwaway server).
 * Uses dist/connector-service when built, else runs the source with Bun. Everything binds 127.0.0.1 and stops at
 * the end.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, waitForHttp as waitFor } from "../test/peers/ports";
import { cpuMs } from "./cpu";
import { startPostgres } from "../test/peers/postgres";

const ROOT = resolve(import.meta.dir, "..");
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const ROUNDS = Number(args.get("rounds") ?? 3);
const COUNT = Number(args.get("count") ?? 20000);
const CONCURRENCY = Number(args.get("concurrency") ?? 16);
const CONNECTORS = Number(args.get("connectors") ?? 10000);
const LISTS = Number(args.get("lists") ?? 300);
const PASSWORD = "bench-admin-password";

const work = mkdtempSync(join(tmpdir(), "cs-bench-stores-"));
const children: Bun.Subprocess[] = [];
/** Until the service says it is ready (listening comes before the administrator exists). */
const waitReady = async (url: string) => {
  for (let i = 0; i < 400; i++) {
    if ((await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200) return;
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not become ready`);
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

type Result = { rps: number; p50_ms: number; p99_ms: number; failures: number; cpu_us?: number };
async function load(url: string, count: number, concurrency: number, auth?: string): Promise<Result> {
  const proc = Bun.spawn(
    [process.execPath, join(ROOT, "bench/load.ts"), url, String(count), String(concurrency), ...(auth ? [auth] : [])],
    { stdout: "pipe", stderr: "inherit" },
  );
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  return JSON.parse(out);
}

async function startService(name: string, env: Record<string, string>) {
  const port = await freePort();
  const binary = join(ROOT, "dist/connector-service");
  const command = existsSync(binary) ? [binary] : [process.execPath, join(ROOT, "src/index.ts")];
  const settings = {
    PATH: process.env.PATH!,
    SERVER__PORT: String(port),
    AUTH__ADMIN_PASSWORD: PASSWORD,
    CONNECTOR__MAX_PER_USER: String(CONNECTORS + 10),
    ...env,
  };
  const proc = Bun.spawn(command, { cwd: work, env: settings, stdout: "ignore", stderr: "inherit" });
  children.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url);
  const basic = `Basic ${btoa(`admin:${PASSWORD}`)}`;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: basic, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${name} ${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  return { name, url, api, pid: proc.pid };
}

async function main() {
  const pg = await startPostgres();
  try {
    const upstreamPort = await freePort();
    children.push(
      Bun.spawn([process.execPath, join(ROOT, "bench/upstream.ts"), String(upstreamPort)], {
        stdout: "ignore",
        stderr: "inherit",
      }),
    );
    const upstream = `http://127.0.0.1:${upstreamPort}/mcp`;
    await waitFor(upstream);
    const services = [
      await startService("SQLite", { DATABASE__PATH: join(work, "cs.db") }),
      await startService("PostgreSQL", {
        DATABASE__URL: await pg.createDatabase(),
        SECRETS__KEY: randomBytes(32).toString("base64"),
      }),
    ];

    // The proxy: one connector each, the same load, rounds interleaved so that both see the same machine.
    const targets: { name: string; url: string; auth?: string; pid?: number }[] = [{ name: "direct", url: upstream }];
    for (const s of services) {
      const connector = await s.api("POST", "/api/v1/connectors", { url: upstream });
      await s.api("POST", `/api/v1/connectors/${connector.id}/connect`, {});
      const token = (await s.api("POST", "/api/v1/tokens", { name: "bench" })).token as string;
      targets.push({
        name: `proxy on ${s.name}`,
        url: `${s.url}/api/v1/connectors/${connector.id}/mcp`,
        auth: `Bearer ${token}`,
        pid: s.pid,
      });
    }
    for (const t of targets) await load(t.url, 2000, CONCURRENCY, t.auth); // warm-up
    const runs: Record<string, Result[]> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of targets) {
        const before = t.pid ? cpuMs(t.pid) : 0;
        const result = await load(t.url, COUNT, CONCURRENCY, t.auth);
        // What the service itself spent per call: its cost, however the two cores were shared.
        if (t.pid) result.cpu_us = ((cpuMs(t.pid) - before) * 1000) / COUNT;
        (runs[t.name] ??= []).push(result);
      }
    }

    // Listing: CONNECTORS connectors each, then pages of 100 — the first, and deep ones by cursor.
    const lists: Record<string, { first: number[]; deep: number[] }> = {};
    for (const s of services) {
      let made = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (made < CONNECTORS) {
            made++;
            await s.api("POST", "/api/v1/connectors", { url: `https://bench-${made}.example/mcp` });
          }
        }),
      );
      const token = (await s.api("POST", "/api/v1/tokens", { name: "lists" })).token as string;
      const get = async (query: string) => {
        const started = performance.now();
        const res = await fetch(`${s.url}/api/v1/connectors?${query}`, { headers: { authorization: `Bearer ${token}` } });
        const body = (await res.json()) as { items: unknown[]; next_cursor: string | null };
        return { ms: performance.now() - started, body };
      };
      const first: number[] = [];
      const deep: number[] = [];
      const cursors: string[] = [];
      // Walk every page once to collect cursors (the walk is measured too: each is a deep page).
      for (let page = await get("limit=100"); page.body.next_cursor;) {
        cursors.push(page.body.next_cursor);
        page = await get(`limit=100&cursor=${encodeURIComponent(page.body.next_cursor)}`);
      }
      for (let i = 0; i < LISTS; i++) {
        first.push((await get("limit=100")).ms);
        deep.push((await get(`limit=100&cursor=${encodeURIComponent(cursors[(i * 37) % cursors.length]!)}`)).ms);
      }
      lists[s.name] = { first, deep };
    }

    console.log(
      `\nconnector-service on two stores: proxy throughput at concurrency ${CONCURRENCY} (${COUNT} calls, ${ROUNDS} rounds, median); lists of ${CONNECTORS} connectors (${LISTS} each)\n`,
    );
    console.log("target                  req/s   p50 ms   p99 ms  service CPU us/req  failures");
    for (const [name, results] of Object.entries(runs)) {
      const cpu = results[0]!.cpu_us === undefined ? "-" : median(results.map((r) => r.cpu_us!)).toFixed(1);
      console.log(
        `${name.padEnd(22)} ${median(results.map((r) => r.rps))
          .toFixed(0)
          .padStart(6)}  ${median(results.map((r) => r.p50_ms))
          .toFixed(3)
          .padStart(7)}  ${median(results.map((r) => r.p99_ms))
          .toFixed(3)
          .padStart(7)}  ${cpu.padStart(18)}  ${results.reduce((n, r) => n + r.failures, 0)}`,
      );
    }
    const rps = (name: string) => median(runs[name]!.map((r) => r.rps));
    console.log(
      `PostgreSQL / SQLite proxy throughput: ${(rps("proxy on PostgreSQL") / rps("proxy on SQLite")).toFixed(3)}x (target: equal within noise)`,
    );
    console.log(`\nlist of 100 out of ${CONNECTORS}     p50 ms   p99 ms   (target p50 <= 5 ms)`);
    for (const [name, { first, deep }] of Object.entries(lists)) {
      console.log(
        `${`${name}, first page`.padEnd(28)} ${percentile(first, 50).toFixed(2).padStart(6)}  ${percentile(first, 99).toFixed(2).padStart(7)}`,
      );
      console.log(
        `${`${name}, a page by cursor`.padEnd(28)} ${percentile(deep, 50).toFixed(2).padStart(6)}  ${percentile(deep, 99).toFixed(2).padStart(7)}`,
      );
    }
  } finally {
    for (const child of children) child.kill();
    await Promise.all(children.map((c) => c.exited));
    await pg.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
