import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { OWN_STORE, storeTests } from "../support/store-tests";

// The suite's PostgreSQL run takes only the files whose outcome can depend on the store (test/support/store-tests.ts).
const ROOT = resolve(import.meta.dir, "../..");

test("the PostgreSQL run takes the files that reach the test store, and leaves out those that cannot or pick their own", async () => {
  const files = await storeTests();
  // Through the harnesses that open the test store: the API through app.handle, the service on a socket.
  expect(files).toContain("test/connectors/api.test.ts");
  expect(files).toContain("test/console/browser.test.ts");
  // No store at all (a gateway over a stdio server), and a file that picks its own.
  expect(files).not.toContain("test/gateway/shared.test.ts");
  expect(files).not.toContain("test/replicas/replicas.test.ts");
  for (const file of Object.keys(OWN_STORE)) expect(existsSync(join(ROOT, file))).toBe(true);
  expect(files.length).toBeGreaterThan(100);
});
