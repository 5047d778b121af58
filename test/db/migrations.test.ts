import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore, SQLITE_MIGRATIONS } from "../../src/db/sqlite";

const dir = mkdtempSync(join(tmpdir(), "cs-migrate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the first open applies every migration, the second none; a new migration upgrades an old database", () => {
  const path = join(dir, "db.sqlite");
  const migrations = SQLITE_MIGRATIONS;
  const first = openSqliteStore(path, migrations);
  expect(first.applied).toBe(migrations.length);
  first.sqlite
    .query(
      "INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES ('u1', 'old', 'h', 'user', 1, 1)",
    )
    .run();
  expect(first.sqlite.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
  expect(first.sqlite.query("PRAGMA foreign_keys").get()).toEqual({ foreign_keys: 1 });
  first.close();

  const second = openSqliteStore(path, migrations);
  expect(second.applied).toBe(0);
  second.close();

  const later = [
    ...migrations,
    {
      sql: ["ALTER TABLE users ADD COLUMN nickname text"],
      bps: true,
      folderMillis: migrations.at(-1)!.folderMillis + 1,
      hash: "test",
    },
  ];
  const upgraded = openSqliteStore(path, later);
  expect(upgraded.applied).toBe(1);
  expect(upgraded.sqlite.query("SELECT username, nickname FROM users").all()).toEqual([{ username: "old", nickname: null }]);
  upgraded.close();
});

test("grants for virtual servers (0013): the rebuilt grants table keeps every grant and token, and each grant names one resource", () => {
  const path = join(dir, "grants.sqlite");
  const tag = SQLITE_MIGRATIONS.findIndex((m) => m.sql.some((s) => s.includes("__new_as_tokens")));
  expect(tag).toBeGreaterThan(0);
  const before = openSqliteStore(path, SQLITE_MIGRATIONS.slice(0, tag));
  for (const statement of [
    "INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES ('u1', 'alice', 'h', 'user', 1, 1)",
    "INSERT INTO connectors (id, owner_id, url, state, created_at, updated_at) VALUES ('c1', 'u1', 'https://mcp.example/mcp', 'connected', 1, 1)",
    "INSERT INTO as_grants (id, user_id, client_id, connector_id, created_at) VALUES ('g1', 'u1', 'client', 'c1', 1)",
    "INSERT INTO as_tokens (digest, grant_id, kind, expires_at, created_at) VALUES ('d1', 'g1', 'refresh', 9, 1)",
  ])
    before.sqlite.query(statement).run();
  before.close();

  const after = openSqliteStore(path);
  expect(after.applied).toBe(SQLITE_MIGRATIONS.length - tag);
  // A table dropped under foreign keys deletes by cascade: the tokens were moved first, so none is lost.
  expect(after.sqlite.query("SELECT connector_id, virtual_server_id FROM as_grants").all()).toEqual([
    { connector_id: "c1", virtual_server_id: null },
  ]);
  expect(after.sqlite.query("SELECT digest, grant_id FROM as_tokens").all()).toEqual([{ digest: "d1", grant_id: "g1" }]);
  expect(after.sqlite.query("PRAGMA foreign_key_check").all()).toEqual([]);
  // The tokens refer to the grants table by its name again, and deleting a grant still ends its tokens.
  after.sqlite.query("DELETE FROM as_grants WHERE id = 'g1'").run();
  expect(after.sqlite.query("SELECT count(*) AS n FROM as_tokens").get()).toEqual({ n: 0 });
  // RFC 8707: one resource a grant, never both nor neither.
  const insert = (connector: string | null, server: string | null) =>
    after.sqlite
      .query(
        "INSERT INTO as_grants (id, user_id, client_id, connector_id, virtual_server_id, created_at) VALUES (?, 'u1', 'c', ?, ?, 1)",
      )
      .run(crypto.randomUUID(), connector, server);
  expect(() => insert(null, null)).toThrow();
  after.sqlite
    .query(
      "INSERT INTO virtual_servers (id, owner_id, name, failure_mode, tool_mode, created_at, updated_at) VALUES ('v1', 'u1', 'V', 'open', 'all', 1, 1)",
    )
    .run();
  expect(() => insert("c1", "v1")).toThrow();
  insert(null, "v1");
  after.close();
});
