import { afterEach, expect, spyOn, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startService, type RunningService } from "../../src/cli/serve";
import { freePort } from "../peers/ports";
import { sharedPostgres, TEST_STORE, testDatabaseEnv } from "../support/store";
import { waitFor } from "../support/wait";

// The start listens first and creates the administrator after: these tests hold the administrator's argon2id hash
// (Bun.password.hash) in the middle of a start to look at what the service answers in that window.

const ADMIN_PASSWORD = "admin-password-for-startup-tests";
const DECOY = "decoy password, never valid";
const hash = Bun.password.hash.bind(Bun.password);
const running: RunningService[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const service of running.splice(0)) await service.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Holds every hash of a password other than the authenticator's decoy until `release` (or `fail`). */
function holdAdminHash() {
  let release!: () => void;
  let fail!: (error: Error) => void;
  const held = new Promise<void>((resolve, reject) => ((release = resolve), (fail = reject)));
  let reached!: () => void;
  const hashing = new Promise<void>((resolve) => (reached = resolve));
  const spy = spyOn(Bun.password, "hash").mockImplementation(async (password, algorithm) => {
    if (password !== DECOY) {
      reached();
      await held;
    }
    return hash(password, algorithm as "argon2id");
  });
  return { hashing, release, fail, restore: () => spy.mockRestore() };
}

async function env(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    ...(await testDatabaseEnv()),
    SERVER__PORT: String(await freePort()),
    SECRETS__KEY: randomBytes(32).toString("base64"),
    SCHEDULER__INTERVAL_SECONDS: "3600",
    SERVER__SHUTDOWN_TIMEOUT_SECONDS: "2",
    ...extra,
  };
}

const basic = (username: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`,
});

/** Polls until the port answers /healthz 200 (the listener is up), at most 10 s. */
async function healthy(base: string): Promise<void> {
  await waitFor(
    `${base}/healthz to answer 200`,
    async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.status === 200,
    10_000,
  );
}

/** Whether `promise` is still pending after `ms`. */
const pendingAfter = async (promise: Promise<unknown>, ms: number) =>
  (await Promise.race([promise.then(() => false), Bun.sleep(ms).then(() => true)])) === true;

test("while the administrator is hashed: /healthz 200, /readyz 503, and a request with its credentials waits, then succeeds", async () => {
  const hold = holdAdminHash();
  try {
    const settings = await env({ AUTH__ADMIN_PASSWORD: ADMIN_PASSWORD });
    const base = `http://127.0.0.1:${settings.SERVER__PORT}`;
    const starting = startService(settings, { writeLog: () => {} });
    await healthy(base);
    await hold.hashing;

    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get("content-type")).toBe("application/problem+json");
    expect(await ready.json()).toMatchObject({ type: "/problems/not-ready", status: 503, detail: "The service is starting" });

    const me = fetch(`${base}/api/v1/users/me`, { headers: basic("admin", ADMIN_PASSWORD) });
    const wrong = fetch(`${base}/api/v1/users/me`, { headers: basic("admin", "not-the-password") });
    const proxied = fetch(`${base}/api/v1/connectors/01940000-0000-7000-8000-000000000000/mcp`, {
      method: "POST",
      headers: basic("admin", ADMIN_PASSWORD),
    });
    // Neither refused nor let in while the administrator's row is not there yet: they wait for it.
    expect(await pendingAfter(me, 150)).toBe(true);
    expect(await pendingAfter(wrong, 0)).toBe(true);
    expect(await pendingAfter(proxied, 0)).toBe(true);

    hold.release();
    running.push(await starting);
    const answered = await me;
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ username: "admin", role: "admin" });
    expect((await wrong).status).toBe(401);
    // The native proxy route waited too, then answered as usual: an unknown connector.
    expect((await proxied).status).toBe(404);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  } finally {
    hold.restore();
  }
});

test("a request that waits longer than the start allows is a 503 with Retry-After, never a 500; the service then serves", async () => {
  const hold = holdAdminHash();
  try {
    const settings = await env({ AUTH__ADMIN_PASSWORD: ADMIN_PASSWORD });
    const base = `http://127.0.0.1:${settings.SERVER__PORT}`;
    const starting = startService(settings, { writeLog: () => {}, startingHoldMs: 100 });
    await healthy(base);
    await hold.hashing;

    const early = await fetch(`${base}/api/v1/users/me`, { headers: basic("admin", ADMIN_PASSWORD) });
    expect(early.status).toBe(503);
    expect(early.headers.get("retry-after")).toBe("1");
    expect(await early.json()).toMatchObject({
      type: "/problems/not-ready",
      detail: "The service is starting: try again in a moment",
    });
    const preflight = await fetch(`${base}/api/v1/connectors/x/mcp`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(503);

    hold.release();
    running.push(await starting);
    expect((await fetch(`${base}/api/v1/users/me`, { headers: basic("admin", ADMIN_PASSWORD) })).status).toBe(200);
  } finally {
    hold.restore();
  }
});

test("a start that fails after listening answers what waited with 503, stops listening and rejects", async () => {
  const hold = holdAdminHash();
  try {
    const settings = await env({ AUTH__ADMIN_PASSWORD: ADMIN_PASSWORD });
    const base = `http://127.0.0.1:${settings.SERVER__PORT}`;
    const starting = startService(settings, { writeLog: () => {} });
    const outcome = starting.then(
      () => "started",
      (e: Error) => e.message,
    );
    await healthy(base);
    await hold.hashing;
    const waiting = fetch(`${base}/api/v1/users/me`, { headers: basic("admin", ADMIN_PASSWORD) });
    expect(await pendingAfter(waiting, 50)).toBe(true);

    hold.fail(new Error("no memory for argon2id"));
    expect(await outcome).toBe("no memory for argon2id");
    const answer = await waiting;
    expect(answer.status).toBe(503);
    expect(await answer.json()).toMatchObject({ type: "/problems/not-ready", detail: "The service could not start" });
    expect(
      await fetch(`${base}/healthz`).then(
        () => "answered",
        () => "refused",
      ),
    ).toBe("refused");
  } finally {
    hold.restore();
  }
});

test("two processes creating the administrator at once on one database: only the one whose row was stored shows its password", async () => {
  let database: Record<string, string>;
  if (TEST_STORE === "postgres") database = { DATABASE__URL: await (await sharedPostgres()).createDatabase() };
  else {
    const dir = mkdtempSync(join(tmpdir(), "cs-startup-"));
    dirs.push(dir);
    database = { DATABASE__PATH: join(dir, "cs.db") };
  }
  // Both hash their generated password before either stores its row: the race of two replicas started together.
  let arrived = 0;
  let bothArrived!: () => void;
  const barrier = new Promise<void>((resolve) => (bothArrived = resolve));
  const spy = spyOn(Bun.password, "hash").mockImplementation(async (password, algorithm) => {
    if (password !== DECOY && ++arrived === 2) bothArrived();
    if (password !== DECOY) await barrier;
    return hash(password, algorithm as "argon2id");
  });
  try {
    const key = randomBytes(32).toString("base64");
    const logs: string[][] = [[], []];
    const started = await Promise.all(
      logs.map(async (lines) =>
        startService({ ...(await env()), ...database, SECRETS__KEY: key }, { writeLog: (line) => lines.push(line) }),
      ),
    );
    running.push(...started);
    const shown = logs.map((lines) =>
      lines
        .map((l) => JSON.parse(l))
        .filter((l) => l.generated)
        .map((l) => l.generated as string),
    );
    expect(shown.flat()).toHaveLength(1);
    const password = shown.flat()[0]!;
    for (const service of started) {
      expect((await fetch(`${service.url}/api/v1/users/me`, { headers: basic("admin", password) })).status).toBe(200);
    }
  } finally {
    spy.mockRestore();
  }
});
