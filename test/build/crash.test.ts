import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SQLITE_MIGRATIONS } from "../../src/db/sqlite";
import { scriptedOAuth, type ScriptedOAuth } from "../peers/scripted-oauth";
import { apiOver, type Api } from "../support/api";
import { buildBinary, startBinary } from "../support/binary";
import { waitFor } from "../support/wait";

/**
 * Crash safety of the compiled binary: killed with SIGKILL at random moments while it acknowledges writes of every
 * kind (connectors, API tokens, OAuth states, providers, users), then restarted: every acknowledged write is there,
 * and the database passes `PRAGMA integrity_check`. CRASH_ROUNDS sets how many kills (CI: 8).
 */
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 8);
const PASSWORD = "crash-test-admin-password";
const work = mkdtempSync(join(tmpdir(), "cs-crash-"));
const database = join(work, "data", "cs.db");
let oauthServer: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  // An OAuth-protected MCP server and its authorization server on one loopback origin, so that a connect writes a
  // pending authorization (an OAuth state).
  let oauth: ScriptedOAuth | undefined;
  oauthServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      const { pathname } = new URL(request.url);
      return pathname === "/mcp" || pathname.startsWith("/.well-known/oauth-protected-resource")
        ? oauth!.mcpServer(request)
        : oauth!.authorizationServer(request);
    },
  });
  const origin = `http://127.0.0.1:${oauthServer.port}`;
  oauth = scriptedOAuth({ as: origin, mcp: origin });
  await buildBinary();
}, 120_000);
afterAll(async () => {
  await oauthServer.stop(true);
  rmSync(work, { recursive: true, force: true });
});

type Acknowledged = { connectors: string[]; tokens: string[]; providers: string[]; users: string[]; pending: string[] };

/** Writes of every kind, as fast as the service acknowledges them, until it dies; returns what it acknowledged. */
async function writeUntilKilled(api: Api, mcpUrl: string, ack: Acknowledged, stop: () => boolean): Promise<void> {
  const card = {
    name: "Crash",
    description: "d",
    url: "https://agent.example/a2a",
    version: "1",
    capabilities: {},
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
  };
  const writers = [
    async () => {
      const res = await api("POST", "/api/v1/connectors", { body: { url: `https://w${ack.connectors.length}.example/mcp` } });
      if (res.status === 201) ack.connectors.push(res.body.id);
    },
    async () => {
      const res = await api("POST", "/api/v1/tokens", { body: { name: "crash" } });
      if (res.status === 201) ack.tokens.push(res.body.id);
    },
    async () => {
      const res = await api("POST", "/api/v1/providers", { body: { agent_card: card } });
      if (res.status === 201) ack.providers.push(res.body.id);
    },
    async () => {
      const username = `u${crypto.randomUUID().slice(0, 8)}`;
      const res = await api("POST", "/api/v1/users", { body: { username, password: "a-long-password" } });
      if (res.status === 201) ack.users.push(username);
    },
    async () => {
      const created = await api("POST", "/api/v1/connectors", { body: { url: mcpUrl } });
      if (created.status !== 201) return;
      ack.connectors.push(created.body.id);
      const connect = await api("POST", `/api/v1/connectors/${created.body.id}/connect`);
      if (connect.body?.state === "auth_required") ack.pending.push(created.body.id);
    },
  ];
  await Promise.all(
    writers.map(async (write) => {
      while (!stop()) await write().catch(() => undefined);
    }),
  );
}

test(`SIGKILL at random moments during acknowledged writes (${ROUNDS} rounds): nothing acknowledged is lost, the database stays whole`, async () => {
  const ack: Acknowledged = { connectors: [], tokens: [], providers: [], users: [], pending: [] };
  const env = { DATABASE__PATH: database, AUTH__ADMIN_PASSWORD: PASSWORD, AUTH__MAX_FAILURES: "100000" };
  const mcpUrl = `http://127.0.0.1:${oauthServer.port}/mcp`;
  let token: string | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    const started = await startBinary(work, env);
    // An API token (made once, kept across the kills): Basic would spend each round's first moments in argon2id.
    token ??= (
      await apiOver((request) => fetch(request), started.url, { username: "admin", password: PASSWORD })(
        "POST",
        "/api/v1/tokens",
        { body: { name: "crash-test" } },
      )
    ).body.token as string;
    const api = apiOver((request) => fetch(request), started.url, { token });
    let dead = false;
    const writing = writeUntilKilled(api, mcpUrl, ack, () => dead);
    // The first round lives until a write of every kind was acknowledged (a user costs an argon2id hash: on a loaded
    // machine a short round may hold none), so the check at the end never hangs on luck; later rounds die at random.
    if (round === 0) await waitFor("a write of every kind", () => Object.values(ack).every((ids) => ids.length > 0), 30_000);
    await Bun.sleep(100 + Math.floor(Math.random() * 400));
    started.proc.kill("SIGKILL");
    await started.proc.exited;
    dead = true;
    await writing;

    const db = new Database(database, { readonly: true });
    try {
      expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
      const ids = (sql: string) => new Set((db.query(sql).all() as { id: string }[]).map((r) => r.id));
      const missing = (acknowledged: string[], stored: Set<string>) => acknowledged.filter((id) => !stored.has(id));
      expect({
        round,
        connectors: missing(ack.connectors, ids("SELECT id FROM connectors")),
        tokens: missing(ack.tokens, ids("SELECT id FROM api_tokens")),
        providers: missing(ack.providers, ids("SELECT id FROM providers")),
        users: missing(ack.users, ids("SELECT username AS id FROM users")),
        pending: missing(ack.pending, ids("SELECT connector_id AS id FROM oauth_states")),
      }).toEqual({ round, connectors: [], tokens: [], providers: [], users: [], pending: [] });
    } finally {
      db.close();
    }
  }
  // Writes of every kind were acknowledged, and some were surely cut off by a kill.
  expect(Object.fromEntries(Object.entries(ack).map(([kind, ids]) => [kind, ids.length > 0]))).toEqual({
    connectors: true,
    tokens: true,
    providers: true,
    users: true,
    pending: true,
  });
  console.log(
    `SIGKILLs: ${ROUNDS}; acknowledged writes checked after them: ${Object.values(ack).reduce((n, k) => n + k.length, 0)}; lost: 0`,
  );
}, 180_000);

test("a migration killed half-way leaves the old schema whole, and the next start applies it", async () => {
  const file = join(work, "migrating.db");
  const migrations = SQLITE_MIGRATIONS;
  const older = migrations.slice(0, -1);
  // The database at the schema before the last migration, with a row in it.
  const seed = Bun.spawnSync([
    process.execPath,
    "-e",
    `
    const { openSqliteStore, SQLITE_MIGRATIONS } = await import(${JSON.stringify(resolve(import.meta.dir, "../../src/db/sqlite.ts"))});
    const db = openSqliteStore(${JSON.stringify(file)}, SQLITE_MIGRATIONS.slice(0, -1));
    db.sqlite.query("INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES ('u1', 'kept', 'h', 'user', 1, 1)").run();
    db.close();
  `,
  ]);
  expect(seed.exitCode).toBe(0);
  // The last migration, and a slow statement after it, killed while the statement runs.
  const slow = {
    ...migrations.at(-1)!,
    sql: [
      ...migrations.at(-1)!.sql,
      "CREATE TABLE slow AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000000) SELECT sum(i) AS s FROM n",
    ],
  };
  const proc = Bun.spawn([
    process.execPath,
    "-e",
    `
    const { openSqliteStore, SQLITE_MIGRATIONS } = await import(${JSON.stringify(resolve(import.meta.dir, "../../src/db/sqlite.ts"))});
    openSqliteStore(${JSON.stringify(file)}, [...SQLITE_MIGRATIONS.slice(0, -1), ${JSON.stringify(slow)}]);
  `,
  ]);
  await Bun.sleep(400);
  proc.kill("SIGKILL");
  await proc.exited;

  const db = new Database(file, { readonly: true });
  const tables = (db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name);
  expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
  expect(tables).not.toContain("slow");
  expect((db.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number }).n).toBe(older.length);
  expect(db.query("SELECT username FROM users").all()).toEqual([{ username: "kept" }]);
  db.close();

  // The next start applies what the crash interrupted, and keeps the data.
  const env = { DATABASE__PATH: file, AUTH__ADMIN_PASSWORD: PASSWORD };
  const next = await startBinary(work, env);
  expect(next.lines.map((l) => JSON.parse(l)).find((l) => l.msg === "database ready").migrations_applied).toBe(1);
  next.proc.kill("SIGTERM");
  await next.proc.exited;
});
