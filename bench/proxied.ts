/**
 * What the proxy benchmarks share: a service process with a connector to the bench upstream and an API token, and a
 * wrk run of the proxy bench's tools/call (bench/wrk-post.lua).
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort, waitForHttp as waitFor } from "../test/peers/ports";

const ROOT = resolve(import.meta.dir, "..");

/**
 * Starts `command` as a service on its own database in `dir` (made here), `env` on top of the defaults, then creates a
 * connector to `upstream` (`connector`: more of the creation's body, e.g. `rate_limits`), connects it and makes an API
 * token: the proxy URL and the Authorization header to call it.
 */
export async function startProxiedService(
  command: string[],
  dir: string,
  upstream: string,
  env: Record<string, string> = {},
  connector: Record<string, unknown> = {},
) {
  const port = await freePort();
  mkdirSync(dir);
  const proc = Bun.spawn(command, {
    cwd: dir,
    env: {
      PATH: process.env.PATH!,
      SERVER__PORT: String(port),
      DATABASE__PATH: join(dir, "cs.db"),
      AUTH__ADMIN_PASSWORD: "bench-admin-password",
      ...env,
    },
    // The request log is written as in production (info level); the bench just discards it.
    stdout: "ignore",
    stderr: "inherit",
  });
  const service = `http://127.0.0.1:${port}`;
  await waitFor(`${service}/healthz`);
  const basic = `Basic ${btoa("admin:bench-admin-password")}`;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${service}${path}`, {
      method,
      headers: { authorization: basic, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  // The administrator is made just after the service listens: wait until it can sign in.
  for (
    let i = 0;
    i < 200 && (await fetch(`${service}/api/v1/users/me`, { headers: { authorization: basic } })).status !== 200;
    i++
  )
    await Bun.sleep(25);
  const created = await api("POST", "/api/v1/connectors", { url: upstream, ...connector });
  await api("POST", `/api/v1/connectors/${created.id}/connect`, {});
  const token = (await api("POST", "/api/v1/tokens", { name: "bench" })).token as string;
  return { proc, url: `${service}/api/v1/connectors/${created.id}/mcp`, auth: `Bearer ${token}` };
}

export type WrkResult = { count: number; rps: number; p50_ms: number; p90_ms: number; p99_ms: number; failures: number };

/** wrk for `seconds` with one thread and `concurrency` connections; the Lua script prints one JSON line. */
export async function wrk(
  url: string,
  concurrency: number,
  seconds: number,
  auth?: string,
  message?: { body: string; session?: string; headers?: Record<string, string> },
): Promise<WrkResult> {
  const proc = Bun.spawn(
    ["wrk", "-t1", `-c${concurrency}`, `-d${seconds}s`, "--timeout", "10s", "-s", join(ROOT, "bench/wrk-post.lua"), url],
    {
      stdout: "pipe",
      stderr: "inherit",
      env: {
        ...process.env,
        WRK_AUTHORIZATION: auth ?? "",
        WRK_BODY: message?.body ?? "",
        WRK_SESSION: message?.session ?? "",
        WRK_HEADERS: Object.entries(message?.headers ?? {})
          .map(([k, v]) => `${k}=${v}`)
          .join(";"),
      },
    },
  );
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const line = out.split("\n").find((l) => l.startsWith("WRK_JSON "));
  if (!line) throw new Error(`wrk printed no result:\n${out}`);
  const r = JSON.parse(line.slice("WRK_JSON ".length)) as {
    requests: number;
    seconds: number;
    p50_ms: number;
    p90_ms: number;
    p99_ms: number;
    errors: number;
  };
  return {
    count: r.requests,
    rps: r.requests / r.seconds,
    p50_ms: r.p50_ms,
    p90_ms: r.p90_ms,
    p99_ms: r.p99_ms,
    failures: r.errors,
  };
}
