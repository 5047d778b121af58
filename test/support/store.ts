import type { SqliteStore } from "../../src/db/sqlite";
import type { Store } from "../../src/db/store";

/** The raw SQLite handle under a service's store, for tests that look at or bend the database itself. */
export function sqliteOf(deps: { store: Store }) {
  if (deps.store.dialect !== "sqlite") throw new Error("this test needs the SQLite store");
  return (deps.store as SqliteStore).sqlite;
}
