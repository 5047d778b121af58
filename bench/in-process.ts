/**
 * The proxy's own work per request, without sockets: the service built in this process (SQLite on disk, the defaults),
 * its proxy entry (proxy/entry.ts, what Bun's native route calls) handed the bench's tools/call with a Bearer API token,
 * and an upstream fetch that answers at once with the bench upstream's JSON result. What is left is the service's own
 * JavaScript — authentication, admission, the strict read, the policy, the forward's bookkeeping, the audit record and
 * its batched insert, metrics — which a socket benchmark (bench/proxy.ts) sees under the noise of Bun's HTTP server and
 * client, the load generator and the upstream sharing two cores. Left out with the socket: the request log line
 * (http/server.ts; some 2 µs).
 *
 *   bun bench/in-process.ts [--requests 50000] [--rounds 5] [--concurrency 16] [--settings "AUDIT__ENABLED=false,…"]
 *   bun --cpu-prof --cpu-prof-dir=DIR bench/in-process.ts …   (where the time goes: Chrome DevTools opens the profile)
 *
 * Prints CPU µs per request per round and the median; several settings side by side with `--compare "a:K=V;b:K=V"`.
 *
 *   bun bench/in-process.ts --through virtual [--requests 50000] [--rounds 5] [--later yes]
 *
 * `--through virtual`: the same call through a virtual server whose one member is that connector (prefix `m0`), in one
 * MCP session of it, and through the member's own proxy URL, in alternating rounds of one process: what the virtual
 * layer adds per call (issue 24's throughput target) without the noise of sockets and of the machine's speed.
 * `--later yes`: the upstream answers on a later turn of the event loop, as over a socket, so that what each call
 * holds lives on meanwhile (the collector then finds more of it; the figures come nearer bench/virtual.ts's).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { buildApp, createServices, type Deps } from "../src/app";
import { loadConfig } from "../src/config/load";
import { openStore } from "../src/db/open";
import { createLogger } from "../src/observability/logger";
import { createLocalRuntime } from "../src/runtime/local";
import { createProcessLimits } from "../src/runtime/process-limits";
import { createSealer } from "../src/secrets/sealer";
import { createUserRepository } from "../src/users/repository";
import { settingsFrom } from "./children";

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const REQUESTS = Number(args.get("requests") ?? 50_000);
const ROUNDS = Number(args.get("rounds") ?? 5);
const CONCURRENCY = Number(args.get("concurrency") ?? 16);
const THROUGH = args.get("through");
const LATER = args.get("later") === "yes";
const COMPARE = (args.get("compare") ?? `default:${args.get("settings") ?? ""}`).split(";").map((part) => {
  const at = part.indexOf(":");
  return { name: part.slice(0, at), settings: settingsFrom(part.slice(at + 1)) };
});

const UPSTREAM = "http://127.0.0.1:9/mcp";
const CALL = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{}}}';
const INIT = { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "bench", version: "1" } };
const RESULTS: Record<string, unknown> = {
  initialize: INIT,
  "tools/call": { content: [{ type: "text", text: "pong" }] },
  "tools/list": { tools: [{ name: "ping", inputSchema: { type: "object" } }] },
};

/** The upstream: a JSON answer at once (to the request's own id), as the bench upstream (bench/upstream.ts) gives it. */
const upstreamFetch = async (_input: unknown, init?: RequestInit): Promise<Response> => {
  const message = init?.body ? (JSON.parse(await new Response(init.body).text()) as { id?: unknown; method: string }) : undefined;
  // `--later yes`: answered on a later turn of the event loop, as over a socket, so that what a call holds lives on.
  if (LATER) await new Promise((resolve) => setTimeout(resolve, 0));
  if (message?.id === undefined) return new Response(null, { status: 202 });
  const answer = JSON.stringify({ jsonrpc: "2.0", id: message.id, result: RESULTS[message.method] ?? {} });
  return new Response(answer, {
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(answer)) },
  });
};

async function serviceWith(settings: Record<string, string>, dir: string) {
  const config = loadConfig({ DATABASE__PATH: join(dir, "cs.db"), SCHEDULER__INTERVAL_SECONDS: "3600", ...settings });
  const store = await openStore(config.database);
  // The request log as in production (info level, one JSON line per request), written nowhere.
  const log = createLogger({ level: config.log.level, write: () => undefined });
  const deps: Deps = {
    config,
    store,
    sealer: createSealer(randomBytes(32)),
    log,
    clock: Date.now,
    sleep: (ms) => Bun.sleep(ms),
    newId: () => Bun.randomUUIDv7(),
    fetch: upstreamFetch as Deps["fetch"],
    publicUrl: () => "http://127.0.0.1:8080",
    readiness: () => ({ ready: true }),
    requestIds: new WeakMap(),
    clientAddress: () => "127.0.0.1",
    runtime: createLocalRuntime({ log, sandbox: { kind: "none" }, limits: createProcessLimits(config.runtime) }),
  };
  const services = createServices(deps);
  return { services, store, app: buildApp(deps, services) };
}

/** An administrator, a connector to the upstream (connected) and an API token, made as the API makes them. */
async function setUp(services: ReturnType<typeof createServices>, store: Awaited<ReturnType<typeof openStore>>) {
  const now = Date.now();
  const id = Bun.randomUUIDv7();
  await createUserRepository(store).insert({
    id,
    username: "bench",
    password_hash: await Bun.password.hash("bench-password-0123", "argon2id"),
    role: "admin",
    disabled_at: null,
    requests_per_minute: null,
    created_at: now,
    updated_at: now,
  });
  const principal = { id, username: "bench", role: "admin" as const };
  return (await services.users.createToken(principal, { name: "bench" })).token;
}

async function run(name: string, settings: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), "cs-in-process-"));
  const { services, store, app } = await serviceWith(settings, dir);
  const token = await setUp(services, store);
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await app.handle(
      new Request(`http://127.0.0.1:8080${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id: string };
  };
  const connector = await call("POST", "/api/v1/connectors", { url: UPSTREAM });
  await call("POST", `/api/v1/connectors/${connector.id}/connect`, {});
  const url = `http://127.0.0.1:8080/api/v1/connectors/${connector.id}/mcp`;
  const headers = {
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
  };
  let failures = 0;
  /** One tools/call through `handle`, which must answer 200 (the first failure says what went wrong). */
  const caller = (handle: (request: Request) => Promise<Response>, to: string, sent: Record<string, string>, body: string) =>
    async function one() {
      // With its Content-Length, as a client over a socket sends it (a body of unknown length is counted as it streams).
      const length = String(Buffer.byteLength(body));
      const response = await handle(new Request(to, { method: "POST", headers: { ...sent, "content-length": length }, body }));
      if (response.status !== 200 && failures++ === 0)
        console.error(`${name}: ${response.status} ${await response.clone().text()}`);
      await response.arrayBuffer();
    };
  const ways: Record<string, () => Promise<void>> = {
    [THROUGH === "virtual" ? "member" : name]: caller((r) => services.proxyEntry.handle(r, connector.id), url, headers, CALL),
  };
  if (THROUGH === "virtual") {
    const server = await call("POST", "/api/v1/virtual-servers", {
      name: "bench",
      members: [{ connector_id: connector.id, prefix: "m0" }],
    });
    const at = `http://127.0.0.1:8080/api/v1/virtual-servers/${server.id}/mcp`;
    const opened = await services.virtualEntry.handle(
      new Request(at, {
        method: "POST",
        headers,
        body: '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}',
      }),
      server.id,
    );
    const session = { ...headers, "mcp-session-id": opened.headers.get("mcp-session-id")! };
    const virtual = caller((r) => services.virtualEntry.handle(r, server.id), at, session, CALL.replace('"ping"', '"m0__ping"'));
    // The virtual server's first listing (the names its calls resolve by) and its member's session, opened.
    await services.virtualEntry.handle(
      new Request(at, { method: "POST", headers: session, body: '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' }),
      server.id,
    );
    ways.virtual = virtual;
  }
  const batch = async (one: () => Promise<void>, count: number) => {
    let left = count;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        // Timers get their turn now and then, as a server's sockets give them (the audit writer's flush is one).
        while (left-- > 0) if ((await one(), left % 256 === 0)) await new Promise((resolve) => setImmediate(resolve));
      }),
    );
  };
  for (const one of Object.values(ways)) await batch(one, 5_000); // warm-up: JIT, caches
  const rounds = new Map<string, number[]>(Object.keys(ways).map((way) => [way, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [way, one] of Object.entries(ways)) {
      const before = process.cpuUsage();
      await batch(one, REQUESTS);
      const used = process.cpuUsage(before);
      rounds.get(way)!.push((used.user + used.system) / REQUESTS);
    }
  }
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  const medians = new Map<string, number>();
  for (const [way, times] of rounds) {
    const median = [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
    medians.set(way, median);
    console.log(
      `${way.padEnd(16)} ${median.toFixed(1).padStart(7)} µs/request (rounds ${times.map((r) => r.toFixed(1)).join(" / ")})` +
        (failures ? ` — ${failures} failures` : ""),
    );
  }
  if (THROUGH === "virtual") {
    const added = rounds.get("virtual")!.map((v, i) => v - rounds.get("member")![i]!);
    const median = [...added].sort((a, b) => a - b)[Math.floor(added.length / 2)]!;
    console.log(
      `virtual layer    ${median.toFixed(1).padStart(7)} µs/call added (rounds ${added.map((a) => a.toFixed(1)).join(" / ")})`,
    );
  }
}

console.log(`${REQUESTS} tools/call × ${ROUNDS} rounds at concurrency ${CONCURRENCY}, CPU per request (median)`);
for (const { name, settings } of COMPARE) await run(name, settings);
process.exit(0);
