/**
 * What request bodies waiting at a slow MCP server cost the proxy in memory: one service (the
 * source, audit trail on as deployed), one user, `--count` POSTs of `--mib` MiB each sent at once to a connector whose
 * server takes the bodies and then never answers; the service's resident memory (VmRSS) before, and once every request
 * has been answered by the service or is waiting at the server, with how many got a 429. Then the server answers
 * everything and all processes stop.
 *
 *   bun bench/held-bodies.ts [--count 64] [--mib 4]
 *
 * Binds 127.0.0.1 only; the service runs as a child process with its own SQLite file in a temporary directory.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "../test/peers/ports";
import { benchChildren, runBench } from "./children";

const ROOT = resolve(import.meta.dir, "..");
const PASSWORD = "bench-admin-password";
const children = benchChildren();
const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1 || value > 1000) throw new Error(`--${name} must be an integer from 1 to 1000`);
  return value;
};
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

const work = mkdtempSync(join(tmpdir(), "cs-held-"));
let upstream: ReturnType<typeof Bun.serve> | undefined;
const waiting: (() => void)[] = [];

async function main() {
  const count = arg("count", 64);
  const mib = arg("mib", 4);
  let hang = false;
  let arrived = 0;
  // A server that answers the handshake by hand, then takes every POST's body and holds the answer back.
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      if (request.method !== "POST") return new Response(null, { status: 405 });
      const message = JSON.parse(await request.text());
      if (hang) {
        arrived++;
        return new Promise<Response>((answer) =>
          waiting.push(() => answer(Response.json({ jsonrpc: "2.0", id: message.id, result: {} }))),
        );
      }
      if (message.id === undefined) return new Response(null, { status: 202 });
      const result =
        message.method === "initialize"
          ? { protocolVersion: message.params.protocolVersion, capabilities: {}, serverInfo: { name: "slow", version: "1" } }
          : {};
      return Response.json({ jsonrpc: "2.0", id: message.id, result });
    },
  });
  const port = await freePort();
  const proc = children.track(
    Bun.spawn([process.execPath, join(ROOT, "src/index.ts"), "serve"], {
      cwd: work,
      env: {
        PATH: process.env.PATH!,
        SERVER__HOST: "127.0.0.1",
        SERVER__PORT: String(port),
        DATABASE__PATH: join(work, "cs.db"),
        AUTH__ADMIN_PASSWORD: PASSWORD,
        LOG__LEVEL: "warn",
      },
      stdout: "ignore",
      stderr: "inherit",
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; (await fetch(`${url}/readyz`).catch(() => undefined))?.status !== 200; i++) {
    if (i > 400) throw new Error("the service did not become ready");
    await Bun.sleep(50);
  }
  const basic = `Basic ${btoa(`admin:${PASSWORD}`)}`;
  const api = async (path: string, body: unknown) =>
    (
      await fetch(`${url}${path}`, {
        method: "POST",
        headers: { authorization: basic, "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    ).json();
  const { id } = await api("/api/v1/connectors", { url: `http://127.0.0.1:${upstream.port}/mcp` });
  const connected = await api(`/api/v1/connectors/${id}/connect`, {});
  if (connected.state !== "connected") throw new Error(`connect: ${JSON.stringify(connected)}`);
  const { token } = await api("/api/v1/tokens", { name: "bench" });
  hang = true;
  await Bun.sleep(500);
  const before = rssMiB(proc.pid);

  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "upload", arguments: { data: "x".repeat(mib * 1024 * 1024 - 100) } },
  });
  const statuses: number[] = [];
  const sent = Array.from({ length: count }, () =>
    fetch(`${url}/api/v1/connectors/${id}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body,
    }).then(async (res) => {
      statuses.push(res.status);
      await res.arrayBuffer();
    }),
  );
  const until = Date.now() + 60_000;
  while (statuses.length + arrived < count && Date.now() < until) await Bun.sleep(100);
  await Bun.sleep(1000);
  const held = rssMiB(proc.pid);
  const refused = statuses.filter((s) => s === 429).length;
  console.log(
    `${count} POSTs of ${mib} MiB at once, ${arrived} waiting at the server, ${refused} answered 429, ${statuses.length - refused} answered otherwise`,
  );
  console.log(
    `service RSS: ${before.toFixed(0)} MiB before, ${held.toFixed(0)} MiB with the requests waiting (+${(held - before).toFixed(0)} MiB)`,
  );
  for (const answer of waiting.splice(0)) answer();
  await Promise.all(sent);
}

await runBench(main, async () => {
  for (const answer of waiting.splice(0)) answer();
  await children.stopAll();
  upstream?.stop(true);
  rmSync(work, { recursive: true, force: true });
});
