import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { copy, copyRows } from "../../src/cli/copy";
import { TABLES, type Row } from "../../src/cli/tables";
import { createConnectorRepository } from "../../src/connectors/repository";
import { openStore } from "../../src/db/open";
import { openSqliteStore } from "../../src/db/sqlite";
import type { Store } from "../../src/db/store";
import { createSealer } from "../../src/secrets/sealer";
import { createUserRepository } from "../../src/users/repository";
import { startEverything } from "../peers/everything";
import type { Peer } from "../peers/ports";
import { fillEveryTable, readTable } from "../support/every-table";
import { mcpClient, toolText } from "../support/mcp";
import { captured } from "../support/output";
import { ADMIN, startTestService, type TestService } from "../support/service";
import { sharedPostgres } from "../support/store";

// Moving up: a SQLite database copied into PostgreSQL (and back), its secrets still sealed under the same key.
const dir = mkdtempSync(join(tmpdir(), "cs-copy-"));
const KEY = randomBytes(32).toString("base64");
let everything: Peer;
beforeAll(async () => {
  everything = await startEverything();
});
afterAll(async () => {
  await everything.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `connector-service copy` and reads the rows it reports per table. */
async function runCopy(from: string, to: string): Promise<Record<string, number>> {
  return (await runCopyReport(from, to)).rows;
}

/** Runs `connector-service copy` and reads its report. */
async function runCopyReport(
  from: string,
  to: string,
): Promise<{ rows: Record<string, number>; not_copied: Record<string, string> }> {
  const { code, text } = await captured("stdout", () => copy(["--from", from, "--to", to]));
  expect(code).toBe(0);
  return JSON.parse(text);
}

/** What a user of the service sees of its data. */
async function contents(service: TestService) {
  const connectors = (await service.api("GET", "/api/v1/connectors?limit=100")).body.items.map((c: Record<string, unknown>) => [
    c.url,
    c.state,
    c.header_names,
  ]);
  const users = (await service.api("GET", "/api/v1/users")).body.items.map((u: Record<string, unknown>) => u.username);
  const providers = (await service.api("GET", "/api/v1/providers")).body.items.map((p: Record<string, unknown>) => p.name);
  return { connectors, users, providers };
}

test("SQLite → PostgreSQL → SQLite: the same data, tokens and sealed headers still work; a second copy changes nothing", async () => {
  const sqliteFile = join(dir, "source.db");
  const source = await startTestService({ DATABASE__PATH: sqliteFile, SECRETS__KEY: KEY });
  let token: string;
  let connectorId: string;
  try {
    await source.api("POST", "/api/v1/users", { body: { username: "lee", password: "lee-password-1", role: "user" } });
    token = (await source.api("POST", "/api/v1/tokens", { body: { name: "agent" } })).body.token;
    connectorId = (
      await source.api("POST", "/api/v1/connectors", { body: { url: everything.url, metadata: { name: "Everything" } } })
    ).body.id;
    expect(
      (
        await source.api("POST", `/api/v1/connectors/${connectorId}/connect`, {
          body: { headers: { "x-api-key": "sealed-at-rest" } },
        })
      ).body.state,
    ).toBe("connected");
    await source.api("POST", "/api/v1/connectors", { body: { url: "https://never-connected.example/mcp" } });
    const card = {
      name: "Copied agent",
      description: "d",
      url: "https://agent.example/a2a",
      version: "1",
      capabilities: {},
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [],
    };
    expect((await source.api("POST", "/api/v1/providers", { body: { agent_card: card } })).status).toBe(201);
  } finally {
    await source.stop();
  }

  const postgres = await (await sharedPostgres()).createDatabase();
  const rows = await runCopy(sqliteFile, postgres);
  expect(rows).toMatchObject({
    users: 2,
    api_tokens: 1,
    connectors: 2,
    oauth_clients: 0,
    oauth_states: 0,
    oauth_grants: 0,
    providers: 1,
  });
  expect(Object.keys(rows).sort()).toEqual(COPIED.toSorted());
  // Idempotent: the same counts again, and nothing doubled.
  expect(await runCopy(sqliteFile, postgres)).toEqual(rows);

  const moved = await startTestService({ DATABASE__URL: postgres, SECRETS__KEY: KEY });
  let before: Awaited<ReturnType<typeof contents>>;
  try {
    before = await contents(moved);
    expect(before.users.sort()).toEqual(["admin", "lee"]);
    expect(before.connectors).toHaveLength(2);
    expect(before.providers).toEqual(["Copied agent"]);
    // The API token and the sealed headers work on PostgreSQL under the same key.
    expect((await moved.api("GET", "/api/v1/connectors", { as: { token } })).status).toBe(200);
    expect((await moved.api("GET", "/api/v1/users/me", { as: { username: "lee", password: "lee-password-1" } })).status).toBe(
      200,
    );
    const { client, close } = await mcpClient(`${moved.url}/api/v1/connectors/${connectorId}/mcp`, ADMIN);
    expect(toolText(await client.callTool({ name: "echo", arguments: { message: "moved" } }))).toBe("Echo: moved");
    await close();
    // Its events were copied with their ids: the next one gets a new id, not one of theirs (a 500 if it did).
    expect((await moved.api("POST", "/api/v1/connectors", { body: { url: "https://after-the-move.example/mcp" } })).status).toBe(
      201,
    );
    before = await contents(moved);
  } finally {
    await moved.stop();
  }

  // And back down, into a new SQLite file, with what the service wrote on PostgreSQL.
  const back = join(dir, "back.db");
  expect(await runCopy(postgres, back)).toMatchObject({ users: 2, api_tokens: 1, connectors: 3, providers: 1 });
  const restored = await startTestService({ DATABASE__PATH: back, SECRETS__KEY: KEY });
  try {
    expect(await contents(restored)).toEqual(before);
    expect(
      (await restored.api("POST", "/api/v1/connectors", { body: { url: "https://after-the-back.example/mcp" } })).status,
    ).toBe(201);
  } finally {
    await restored.stop();
  }
}, 60_000);

const COPIED = TABLES.filter((entry) => entry.copied).map((entry) => entry.name);

/** Runs `body` on the store at `location` (a SQLite file or a PostgreSQL URL), then closes it. */
async function withStore<T>(location: string, body: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(
    location.startsWith("postgres")
      ? { path: "", url: location, maxConnections: 2 }
      : { path: location, checkpointThread: false },
  );
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}

/** Every table of the store at `location`, each in key order. */
const snapshot = (location: string) =>
  withStore(location, async (store) => {
    const tables: Record<string, Row[]> = {};
    for (const entry of TABLES) tables[entry.name] = await readTable(store, entry);
    return tables;
  });

test("every table, row for row: SQLite → PostgreSQL → PostgreSQL → SQLite → SQLite; sealed values still open; copying again changes nothing", async () => {
  const key = randomBytes(32);
  const origin = join(dir, "every.db");
  await fillEveryTable(openSqliteStore(origin, undefined, false), key);
  const source = await snapshot(origin);
  // The filler's promise, checked: no table is compared empty.
  expect(TABLES.filter((entry) => source[entry.name]!.length === 0).map((entry) => entry.name)).toEqual([]);

  const server = await sharedPostgres();
  const [postgres, postgresAgain] = [await server.createDatabase(), await server.createDatabase()];
  const [sqlite, sqliteAgain] = [join(dir, "every-back.db"), join(dir, "every-again.db")];
  const expected = Object.fromEntries(COPIED.map((name) => [name, source[name]!.length]));

  const report = await runCopyReport(origin, postgres);
  expect(report.rows).toEqual(expected);
  expect(Object.keys(report.not_copied)).toEqual(["job_leases", "rate_buckets", "parked_handoffs"]);
  expect(await runCopy(origin, postgres)).toEqual(expected);
  // Two rows a page: every table of more than two rows is read in pages after its last key (composite keys too).
  expect(await withStore(postgres, (from) => withStore(postgresAgain, (to) => copyRows(from, to, 2)))).toEqual(expected);
  expect(await runCopy(postgres, postgresAgain)).toEqual(expected);
  expect(await runCopy(postgresAgain, sqlite)).toEqual(expected);
  expect(await withStore(sqlite, (from) => withStore(sqliteAgain, (to) => copyRows(from, to, 2)))).toEqual(expected);
  expect(await runCopy(sqlite, sqliteAgain)).toEqual(expected);

  for (const target of [postgres, postgresAgain, sqlite, sqliteAgain]) {
    const copied = await snapshot(target);
    for (const entry of TABLES) {
      expect({ target, table: entry.name, rows: copied[entry.name] }).toEqual({
        target,
        table: entry.name,
        rows: entry.copied ? source[entry.name]! : [],
      });
    }
  }

  // Every sealed value of every copied table still opens under the key, in its own row's context.
  const sealer = createSealer(key);
  const opened: Record<string, number> = {};
  const copied = await snapshot(sqliteAgain);
  for (const entry of TABLES) {
    for (const [field, context] of Object.entries(entry.sealed)) {
      for (const row of copied[entry.name]!) {
        if (row[field] === null) continue;
        sealer.open(row[field] as string, context(row));
        opened[`${entry.name}.${field}`] = (opened[`${entry.name}.${field}`] ?? 0) + 1;
      }
    }
  }
  expect(Object.keys(opened).sort()).toEqual(
    TABLES.filter((entry) => entry.copied)
      .flatMap((entry) => Object.keys(entry.sealed).map((field) => `${entry.name}.${field}`))
      .sort(),
  );

  // The service goes on writing on each copy: a new event takes a new id after the copied ones.
  const newest = Math.max(...source.connector_events!.map((row) => row.id as number));
  const connectorId = source.connectors![0]!.id as string;
  for (const target of [postgres, sqliteAgain]) {
    await withStore(target, async (store) => {
      const connectors = createConnectorRepository(store);
      expect(await connectors.delete(connectorId)).toBe(true);
      expect((await connectors.eventBounds()).newest).toBeGreaterThan(newest);
    });
  }
}, 60_000);

test("copy says how to use it when its arguments are wrong", async () => {
  expect(await copy(["--from", join(dir, "x.db")])).toBe(2);
  expect(await copy(["--from", "a.db", "--to", "a.db"])).toBe(2);
  expect(await copy(["--from", join(dir, "missing.db"), "--to", join(dir, "y.db")])).toBe(2);
});

test("a target the service already started on (its own administrator) stops the copy with a clear message, no stack", async () => {
  const [from, to] = [join(dir, "conflict-source.db"), join(dir, "conflict-target.db")];
  for (const [file, id] of [
    [from, "00000000-0000-7000-8000-000000000001"],
    [to, "00000000-0000-7000-8000-000000000002"],
  ] as const) {
    const store = openSqliteStore(file, undefined, false);
    await createUserRepository(store).insert({
      id,
      username: "admin",
      password_hash: "x",
      role: "admin",
      disabled_at: null,
      requests_per_minute: null,
      created_at: 1,
      updated_at: 1,
    });
    await store.close();
  }
  const postgres = await (await sharedPostgres()).createDatabase();
  expect(await runCopy(to, postgres)).toMatchObject({ users: 1 });
  for (const target of [to, postgres]) {
    const { code, text: message } = await captured("stderr", () => copy(["--from", from, "--to", target]));
    expect(code).toBe(1);
    expect(message).toStartWith("connector-service copy: stopped at table users after 0 of its rows: ");
    expect(message).toMatch(/unique/i);
    expect(message).toContain("copy into a new database");
    expect(message).not.toContain("insert into");
    expect(message.split("\n").filter(Boolean)).toHaveLength(1);
  }
});
