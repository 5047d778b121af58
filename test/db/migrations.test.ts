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
