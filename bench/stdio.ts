/**
 * Managed stdio throughput: `tools/call` (server-everything's `echo`) on one MCP session with N calls in flight,
 * through four paths to the same stdio server (`node <server-everything> stdio`), in one run, rounds interleaved:
 *
 *   direct             the MCP SDK's StdioClientTransport spawning the server itself (no HTTP at all)
 *   connector-service  a managed connector (preset `mcp+stdio://everything`, RUNTIME__DRIVER=local), called through
 *                      the proxy URL with the SDK's Streamable HTTP client and a Bearer API token
 *   supergateway       npm `supergateway --stdio … --outputTransport streamableHttp --stateful` (one process per
 *                      session, as the service's local driver; its stateless default spawns one per request)
 *   mcp-proxy          npm `mcp-proxy --server stream` (as test/peers/mcp-proxy.ts runs it)
 *   its gateway alone  `bun src/index.ts gateway -- node <server-everything> stdio`: the per-session gateway the local
 *                      driver runs in-process behind the proxy, without the proxy (for where the time goes; no target)
 *
 *   bun bench/stdio.ts [--calls 2000] [--concurrency 8] [--rounds 3] [--supergateway <path to its dist/index.js>]
 *                      [--profile <dir>]   (the service under `bun --cpu-prof`, its profile written to <dir>)
 *                      [--audit false]     (the service without its audit trail; on by default, as in production)
 *                      [--era 2026-07-28]  (the clients speak MCP 2026-07-28: the MCP SDK v2 client pinned to it; only
 *                                           the service and mcp-proxy serve that era, so only they run)
 *
 * supergateway is not a dependency of the project: without `--supergateway`, the bench installs supergateway 4.0.0
 * with npm into a folder of the system's temporary directory (once; it is reused by later runs). The clients all run in this process (the direct one has to), so
 * every configuration pays the same client cost. Runs the source (`bun src/index.ts serve`). Everything listens on
 * 127.0.0.1 (supergateway takes no host option: it listens on every interface, and is only reached on 127.0.0.1),
 * every call has a timeout, the run has an overall deadline, and every child — and every process they started — is
 * stopped at the end, also on an error or Ctrl-C.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { EVERYTHING } from "../test/peers/everything";
import { freePort } from "../test/peers/ports";

const ROOT = resolve(import.meta.dir, "..");
const MCP_PROXY = join(ROOT, "node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs");
const PASSWORD = "bench-admin-password";
const CALL_TIMEOUT_MS = 10_000;

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const CALLS = Number(args.get("calls") ?? 2000);
const CONCURRENCY = Number(args.get("concurrency") ?? 8);
const ROUNDS = Number(args.get("rounds") ?? 3);
const AUDIT = args.get("audit") ?? "true"; // AUDIT__ENABLED of the service (false: to see what the audit trail costs here)
const ERA = args.get("era") ?? "2025-11-25";
const MODERN = ERA >= "2026-07-28";
const PROFILE = args.get("profile"); // a directory: the service runs with `bun --cpu-prof` and writes its profile there
const SUPERGATEWAY = args.get("supergateway") ?? installSupergateway();

/** supergateway from npm into a folder of the temporary directory, outside the repository (once). */
function installSupergateway(): string {
  const dir = join(tmpdir(), "cs-bench-supergateway");
  const entry = join(dir, "node_modules/supergateway/dist/index.js");
  if (!existsSync(entry)) {
    const done = Bun.spawnSync(
      ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", dir, "supergateway@4.0.0"],
      { stdout: "ignore", stderr: "inherit" },
    );
    if (done.exitCode !== 0) throw new Error("could not install supergateway with npm");
  }
  return entry;
}
for (const [name, n] of Object.entries({ calls: CALLS, concurrency: CONCURRENCY, rounds: ROUNDS })) {
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new Error(`--${name} must be a positive integer`);
}
if (!existsSync(SUPERGATEWAY)) throw new Error(`supergateway not found at ${SUPERGATEWAY} (see the header of bench/stdio.ts)`);

const children = new Set<Bun.Subprocess>();
const clients: Client[] = [];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const spawn = (command: string[], env: Record<string, string> = {}, cwd?: string) => {
  const proc = Bun.spawn(command, {
    cwd,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", ...env },
    stdout: "ignore",
    stderr: "ignore",
  });
  children.add(proc);
  void proc.exited.then(() => children.delete(proc));
  return proc;
};

/** Every descendant of `pid` (from /proc), so that servers started by a gateway can be killed if the gateway does not. */
function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of parents.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

async function stopAll() {
  await Promise.all(clients.splice(0).map((c) => Promise.race([c.close().catch(() => undefined), Bun.sleep(3000)])));
  const all = descendants(process.pid);
  for (const child of children) child.kill("SIGTERM");
  const stopped = Promise.all([...children].map((c) => c.exited));
  if ((await Promise.race([stopped.then(() => true), Bun.sleep(8_000).then(() => false)])) === false) {
    for (const child of children) child.kill("SIGKILL");
  }
  await Bun.sleep(500);
  // Whatever is left of the tree (a managed server, a wrapped server, the direct client's server): killed.
  for (const pid of all) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

const waitFor = async (what: string, check: () => Promise<boolean>, ms = 20_000) => {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check().catch(() => false)) return;
    await Bun.sleep(50);
  }
  throw new Error(`${what}: not within ${ms} ms`);
};

async function httpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  if (MODERN) {
    // The same calls as a 2026-07-28 client makes them (no initialize, no session; the routing headers).
    const modern = new ModernClient({ name: "bench-stdio", version: "1.0.0" }, {
      versionNegotiation: { mode: { pin: ERA } },
    } as never);
    clients.push(modern as unknown as Client);
    await modern.connect(new ModernTransport(new URL(url), { requestInit: { headers } }));
    return modern as unknown as Client;
  }
  const client = new Client({ name: "bench-stdio", version: "1.0.0" });
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }), {
    timeout: CALL_TIMEOUT_MS,
  });
  return client;
}

/** CPU time (user + system, ms) of one process, from /proc (Linux). */
function ownCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 100 Hz ticks
  } catch {
    return 0;
  }
}
/** The CPU of the wrapper process itself and of the MCP servers under it (its descendants). */
const cpuSplit = (pid: number | undefined) =>
  pid === undefined
    ? { wrapper: 0, server: 0 }
    : { wrapper: ownCpuMs(pid), server: descendants(pid).reduce((n, c) => n + ownCpuMs(c), 0) };

type Target = {
  name: string;
  client: Client;
  pid?: number;
  serverPid?: number;
  rps: number[];
  wrapperUs: number[];
  serverUs: number[];
  clientUs: number[];
};

async function directClient(): Promise<{ client: Client; serverPid: number }> {
  const client = new Client({ name: "bench-stdio", version: "1.0.0" });
  clients.push(client);
  const transport = new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" });
  await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
  return { client, serverPid: transport.pid! };
}

async function startService(work: string): Promise<{ client: Client; pid: number }> {
  const port = await freePort();
  const presets = [
    {
      url: "mcp+stdio://everything",
      metadata: { name: "Everything", description: "The reference MCP server, run locally" },
      stdio: { image: "example/server-everything:latest", command: ["node", EVERYTHING], args: ["stdio"] },
    },
  ];
  const profile = PROFILE ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${resolve(PROFILE)}`] : [];
  const proc = spawn(
    [process.execPath, ...profile, join(ROOT, "src/index.ts"), "serve"],
    {
      SERVER__HOST: "127.0.0.1",
      SERVER__PORT: String(port),
      DATABASE__PATH: join(work, "cs.db"),
      AUTH__ADMIN_PASSWORD: PASSWORD,
      LOG__LEVEL: "info",
      RUNTIME__DRIVER: "local",
      AUDIT__ENABLED: AUDIT,
      // What `serve` would re-execute itself with; set here so that it does not (a re-execution drops --cpu-prof).
      BUN_CONFIG_MAX_HTTP_REQUESTS: "8192",
      CONNECTOR__PRESETS: JSON.stringify(presets),
    },
    work,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    "connector-service ready",
    async () => (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })).status === 200,
    30_000,
  );
  const call = async (authorization: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(70_000),
    });
    if (!res.ok) throw new Error(`connector-service: ${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const token = (await call(`Basic ${btoa(`admin:${PASSWORD}`)}`, "POST", "/api/v1/tokens", { name: "bench" })).token as string;
  const auth = `Bearer ${token}`;
  const connector = await call(auth, "POST", "/api/v1/connectors", { url: "mcp+stdio://everything" });
  const connected = await call(auth, "POST", `/api/v1/connectors/${connector.id}/connect`, {});
  if (connected.state !== "connected") throw new Error(`connector-service: connect: ${JSON.stringify(connected)}`);
  return { client: await httpClient(`${url}/api/v1/connectors/${connector.id}/mcp`, { authorization: auth }), pid: proc.pid };
}

/** The service's own gateway alone (`connector-service gateway`, what the local driver runs in-process per connector). */
async function startGateway(): Promise<{ client: Client; pid: number }> {
  const port = await freePort();
  const proc = spawn(
    [
      process.execPath,
      join(ROOT, "src/index.ts"),
      "gateway",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--",
      "node",
      EVERYTHING,
      "stdio",
    ],
    { LOG__LEVEL: "warn" },
  );
  await waitFor(
    "gateway up",
    async () => (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) })).ok,
  );
  return { client: await httpClient(`http://127.0.0.1:${port}/mcp`), pid: proc.pid };
}

async function startSupergateway(): Promise<{ client: Client; pid: number }> {
  const port = await freePort();
  const proc = spawn([
    "node",
    SUPERGATEWAY,
    "--stdio",
    `node ${EVERYTHING} stdio`,
    "--outputTransport",
    "streamableHttp",
    "--stateful",
    "--port",
    String(port),
    "--logLevel",
    "none",
    "--healthEndpoint",
    "/healthz",
  ]);
  await waitFor(
    "supergateway up",
    async () => (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) })).ok,
  );
  return { client: await httpClient(`http://127.0.0.1:${port}/mcp`), pid: proc.pid };
}

async function startMcpProxy(): Promise<{ client: Client; pid: number }> {
  const port = await freePort();
  const proc = spawn([
    "node",
    MCP_PROXY,
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--server",
    "stream",
    "--",
    "node",
    EVERYTHING,
    "stdio",
  ]);
  await waitFor("mcp-proxy up", async () => {
    await fetch(`http://127.0.0.1:${port}/mcp`, { signal: AbortSignal.timeout(1000) });
    return true;
  });
  return { client: await httpClient(`http://127.0.0.1:${port}/mcp`), pid: proc.pid };
}

/** `count` echo calls on `client`, `concurrency` in flight; calls/s. Every answer is checked. */
async function run(client: Client, count: number, concurrency: number): Promise<number> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const params = { name: "echo", arguments: { message: `m${i}` } };
      const result = (await (MODERN
        ? client.callTool(params)
        : client.callTool(params, undefined, { timeout: CALL_TIMEOUT_MS }))) as { content: { text: string }[] };
      if (result.content[0]?.text !== `Echo: m${i}`) throw new Error(`unexpected answer: ${JSON.stringify(result)}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return count / ((performance.now() - started) / 1000);
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), "cs-bench-stdio-"));
  // The whole run is bounded: at worst 50 calls/s for every call, plus start-up.
  const deadline = setTimeout(
    () => {
      console.error("bench/stdio.ts: overall deadline reached; stopping");
      void stopAll().finally(() => process.exit(2));
    },
    120_000 + (ROUNDS * 4 + 4) * (CALLS / 50) * 1000,
  );
  try {
    console.log(
      `loadavg ${readFileSync("/proc/loadavg", "utf8").trim()}; ${CALLS} calls, concurrency ${CONCURRENCY}, ${ROUNDS} rounds, service audit ${AUDIT}, MCP ${ERA}`,
    );
    const targets: Target[] = (
      MODERN
        ? [
            { name: "connector-service", ...(await startService(work)) },
            { name: "mcp-proxy", ...(await startMcpProxy()) },
          ]
        : [
            { name: "direct (SDK stdio)", ...(await directClient()) },
            { name: "connector-service", ...(await startService(work)) },
            { name: "supergateway", ...(await startSupergateway()) },
            { name: "mcp-proxy", ...(await startMcpProxy()) },
            { name: "its gateway alone", ...(await startGateway()) },
          ]
    ).map((t) => ({ ...t, rps: [], wrapperUs: [], serverUs: [], clientUs: [] }));
    // Warm-up: a full round's calls each (Node's JIT in the wrappers and the server needs more than a few hundred).
    for (const t of targets) await run(t.client, CALLS, CONCURRENCY);
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating order: rotate the start by one each round.
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
      for (const t of order) {
        const before = t.pid ? cpuSplit(t.pid) : { wrapper: 0, server: ownCpuMs(t.serverPid!) };
        const clientBefore = process.cpuUsage();
        const rps = await run(t.client, CALLS, CONCURRENCY);
        const client = process.cpuUsage(clientBefore);
        const after = t.pid ? cpuSplit(t.pid) : { wrapper: 0, server: ownCpuMs(t.serverPid!) };
        t.rps.push(rps);
        t.wrapperUs.push(((after.wrapper - before.wrapper) * 1000) / CALLS);
        t.serverUs.push(((after.server - before.server) * 1000) / CALLS);
        t.clientUs.push((client.user + client.system) / CALLS);
        console.log(`round ${round + 1}  ${t.name.padEnd(20)} ${rps.toFixed(0).padStart(7)} calls/s`);
      }
    }
    const m = Object.fromEntries(targets.map((t) => [t.name, median(t.rps)]));
    const service = m["connector-service"]!;
    console.log(
      `\ntarget               calls/s (median)  client CPU us/call  wrapper CPU us/call  server CPU us/call  rounds (calls/s)`,
    );
    for (const t of targets) {
      const wrapper = t.pid ? median(t.wrapperUs).toFixed(0) : "-";
      console.log(
        `${t.name.padEnd(20)} ${m[t.name]!.toFixed(0).padStart(8)}  ${median(t.clientUs).toFixed(0).padStart(18)}  ${wrapper.padStart(19)}  ${median(t.serverUs).toFixed(0).padStart(18)}        ${t.rps.map((r) => r.toFixed(0)).join(" / ")}`,
      );
    }
    const ratio = (name: string, goal: number, above: boolean) => {
      const r = service / m[name]!;
      console.log(
        `connector-service / ${name.padEnd(20)} ${r.toFixed(2)}x  (target >= ${goal}x: ${r >= goal === above ? "met" : "NOT met"})`,
      );
    };
    console.log("");
    if (!MODERN) ratio("direct (SDK stdio)", 0.8, true);
    if (!MODERN) ratio("supergateway", 1.5, true);
    ratio("mcp-proxy", 1.5, true);
    console.log(`loadavg after ${readFileSync("/proc/loadavg", "utf8").trim()}`);
  } finally {
    clearTimeout(deadline);
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

process.on("SIGINT", () => void stopAll().finally(() => process.exit(130)));
process.on("SIGTERM", () => void stopAll().finally(() => process.exit(143)));
await main().catch(async (e) => {
  console.error(e);
  await stopAll();
  process.exit(1);
});
