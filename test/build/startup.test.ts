import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../peers/ports";
import { BINARY, buildBinary } from "../support/binary";

const work = mkdtempSync(join(tmpdir(), "cs-binary-startup-"));

beforeAll(() => buildBinary(), 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

test("first start of the binary: /healthz answers before the administrator exists; its request sent then is answered 200, /readyz 503 until ready", async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const password = "binary-startup-admin-password";
  const proc = Bun.spawn([BINARY, "serve"], {
    cwd: work,
    env: {
      PATH: process.env.PATH!,
      SERVER__PORT: String(port),
      DATABASE__PATH: join(work, "data", "cs.db"),
      AUTH__ADMIN_PASSWORD: password,
    },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "inherit",
  });
  try {
    // As a health check would: from the spawn, every 2 ms, a refused connection retried.
    let healthz: Response | undefined;
    for (const until = Date.now() + 15_000; healthz?.status !== 200; await Bun.sleep(2)) {
      if (Date.now() > until) throw new Error("/healthz never answered 200");
      healthz = await fetch(`${base}/healthz`).catch(() => undefined);
    }
    expect(await healthz.json()).toEqual({ status: "ok" });
    // At once, while the administrator's password may still be hashed (argon2id, tens of ms): never a 401 or a 5xx.
    const me = fetch(`${base}/api/v1/users/me`, { headers: { authorization: `Basic ${btoa(`admin:${password}`)}` } });
    const readiness: number[] = [];
    for (const until = Date.now() + 15_000; readiness.at(-1) !== 200; await Bun.sleep(2)) {
      if (Date.now() > until) throw new Error(`/readyz never answered 200: ${readiness.join(" ")}`);
      readiness.push((await fetch(`${base}/readyz`)).status);
    }
    expect(readiness.filter((status) => status !== 503 && status !== 200)).toEqual([]);
    const answered = await me;
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ username: "admin", role: "admin" });
  } finally {
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  }
});
