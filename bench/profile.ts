/**
 * Where the MCP proxy's CPU goes: the service run from source under `bun --cpu-prof`, the bench upstream, and wrk
 * sending the proxy bench's tools/call (bench/wrk-post.lua, a Bearer API token) for a fixed time; then the profile's
 * samples summed by function — self (the function's own code) and total (with what it calls) — and by file.
 *
 *   bun bench/profile.ts [--seconds 10] [--concurrency 32] [--top 40] [--settings "AUDIT__ENABLED=false,…"] [--keep DIR]
 *                        [--through virtual|bridge] [--list yes] [--tool ping|ping-stream] [--members 10] [--tools 50]
 *
 * `--through virtual`: the same call through a virtual server whose one member is that connector (prefix `m0`), in
 * one MCP session of the virtual server; `--members N` makes it N members, each a connector of its own to the upstream
 * (`--tools T` tools each): with `--list yes`, the listing that asks them all, as bench/virtual.ts measures it.
 * `--through bridge`: the call as a 2026-07-28 client sends it, which the era
 * bridge serves over a 2025 session (the bench upstream speaks only 2025). `--tool ping-stream`: the upstream answers
 * the call on an event stream, as the MCP SDK's servers do (a proxied connector only).
 *
 * The profile is of one process serving the load, so its shares are steadier than throughput on a shared machine.
 * `--keep DIR` leaves the .cpuprofile there (Chrome DevTools opens it). Every process binds 127.0.0.1 and is stopped
 * at the end.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { freePort, waitForHttp as waitFor } from "../test/peers/ports";
import { benchChildren, runBench, settingsFrom } from "./children";
import { cpuMs } from "./cpu";
import { startProxiedService, wrk } from "./proxied";

const ROOT = resolve(import.meta.dir, "..");
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const SECONDS = Number(args.get("seconds") ?? 10);
const CONCURRENCY = Number(args.get("concurrency") ?? 32);
const TOP = Number(args.get("top") ?? 40);
const SETTINGS = settingsFrom(args.get("settings") ?? "");
const KEEP = args.get("keep");
const THROUGH = args.get("through") ?? "connector";
/** `--list`: tools/list instead of tools/call (through a virtual server: the listing that asks every member). */
const LIST = args.get("list") === "yes";
const TOOL = args.get("tool") ?? "ping";
const MEMBERS = Number(args.get("members") ?? 1);
const TOOLS = Number(args.get("tools") ?? 1);

const work = mkdtempSync(join(tmpdir(), "cs-profile-"));
const children = benchChildren();

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[] };

/** Samples by function: self (the sample's own frame) and total (every distinct function on its stack). */
function summarise(profile: Profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const where = (n: Node) => {
    const file = n.callFrame.url ? relative(ROOT, n.callFrame.url.replace(/^file:\/\//, "")) : "";
    return `${n.callFrame.functionName || "(anonymous)"} ${file}${file ? `:${n.callFrame.lineNumber + 1}` : ""}`;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const files = new Map<string, number>();
  for (const id of profile.samples) {
    const leaf = byId.get(id)!;
    self.set(where(leaf), (self.get(where(leaf)) ?? 0) + 1);
    const file = leaf.callFrame.url ? relative(ROOT, leaf.callFrame.url.replace(/^file:\/\//, "")) : leaf.callFrame.functionName;
    files.set(file, (files.get(file) ?? 0) + 1);
    const seen = new Set<string>();
    for (let n: Node | undefined = leaf; n; n = byId.get(parent.get(n.id) ?? -1)) {
      const key = where(n);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + 1);
    }
  }
  return { count: profile.samples.length, self, total, files };
}

/** A virtual server over the connector at `proxyUrl` (prefix m0) and an MCP session of it: wrk's URL and message. */
async function throughVirtualServer(proxyUrl: string, auth: string, upstream: string) {
  const origin = new URL(proxyUrl).origin;
  const headers = { authorization: auth, "content-type": "application/json", accept: "application/json, text/event-stream" };
  const members = [{ connector_id: proxyUrl.split("/").at(-2)!, prefix: "m0" }];
  for (let i = 1; i < MEMBERS; i++) {
    const made = await fetch(`${origin}/api/v1/connectors`, {
      method: "POST",
      headers,
      body: JSON.stringify({ url: `${upstream}/m${i}` }),
    });
    const { id } = (await made.json()) as { id: string };
    await fetch(`${origin}/api/v1/connectors/${id}/connect`, { method: "POST", headers, body: "{}" });
    members.push({ connector_id: id, prefix: `m${i}` });
  }
  const created = await fetch(`${origin}/api/v1/virtual-servers`, {
    method: "POST",
    headers,
    body: JSON.stringify({ name: "profile", members }),
  });
  const url = `${origin}/api/v1/virtual-servers/${((await created.json()) as { id: string }).id}/mcp`;
  const opened = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "profile", version: "1" } },
    }),
  });
  const session = opened.headers.get("mcp-session-id")!;
  await fetch(url, {
    method: "POST",
    headers: { ...headers, "mcp-session-id": session },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  const body = JSON.stringify(
    LIST
      ? { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }
      : { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "m0__ping", arguments: {} } },
  );
  return { url, message: { body, session } };
}

/** A 2026-07-28 tools/call to the 2025-only bench upstream: served by the era bridge (docs/behaviour.md "Protocol eras"). */
function throughEraBridge(url: string) {
  const _meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "profile", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ping", arguments: {}, _meta } });
  return {
    url,
    message: { body, headers: { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "ping" } },
  };
}

async function main() {
  const upstreamPort = await freePort();
  children.track(
    Bun.spawn([process.execPath, join(ROOT, "bench/upstream.ts"), String(upstreamPort), String(TOOLS)], {
      stdout: "ignore",
      stderr: "inherit",
    }),
  );
  const upstream = `http://127.0.0.1:${upstreamPort}/mcp`;
  await waitFor(upstream);

  const dir = join(work, "service");
  const command = [process.execPath, "--cpu-prof", `--cpu-prof-dir=${dir}`, join(ROOT, "src/index.ts")];
  // BUN_CONFIG_MAX_HTTP_REQUESTS set, so serve does not re-execute itself (cli/fetch-limit.ts), which would drop --cpu-prof.
  const started = await startProxiedService(command, dir, upstream, { BUN_CONFIG_MAX_HTTP_REQUESTS: "8192", ...SETTINGS });
  const service = children.track(started.proc);
  const target =
    THROUGH === "virtual"
      ? await throughVirtualServer(started.url, started.auth, `http://127.0.0.1:${upstreamPort}`)
      : THROUGH === "bridge"
        ? throughEraBridge(started.url)
        : TOOL !== "ping"
          ? {
              url: started.url,
              message: {
                body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: TOOL, arguments: {} } }),
              },
            }
          : undefined;
  const run = (seconds: number) =>
    target
      ? wrk(target.url, CONCURRENCY, seconds, started.auth, target.message)
      : wrk(started.url, CONCURRENCY, seconds, started.auth);
  await run(2); // warm-up: JIT, pools, caches
  const cpuBefore = cpuMs(service.pid);
  const result = await run(SECONDS);
  const cpuUs = ((cpuMs(service.pid) - cpuBefore) * 1000) / result.count;
  service.kill("SIGTERM");
  await service.exited;

  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) throw new Error("the service wrote no .cpuprofile");
  const { count, self, total, files } = summarise(JSON.parse(readFileSync(join(dir, file), "utf8")) as Profile);
  if (KEEP) {
    mkdirSync(KEEP, { recursive: true });
    await Bun.write(join(KEEP, file), Bun.file(join(dir, file)));
  }
  const pct = (n: number) => `${((100 * n) / count).toFixed(1).padStart(5)} %`;
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  console.log(
    `\n${result.count} requests in ${SECONDS} s (${result.rps.toFixed(0)} req/s, ${result.failures} failures), ` +
      `service CPU ${cpuUs.toFixed(1)} µs/request; ${count} samples (warm-up and set-up included)` +
      (Object.keys(SETTINGS).length ? `; settings ${JSON.stringify(SETTINGS)}` : ""),
  );
  console.log("\nself, by function:");
  for (const [name, n] of top(self, TOP)) console.log(`${pct(n)}  ${name}`);
  console.log("\ntotal (with callees), by function:");
  for (const [name, n] of top(total, TOP)) console.log(`${pct(n)}  ${name}`);
  console.log("\nself, by file:");
  for (const [name, n] of top(files, 25)) console.log(`${pct(n)}  ${name}`);
}

await runBench(main, async () => {
  await children.stopAll();
  rmSync(work, { recursive: true, force: true });
});
