import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { resealAll, rotateKey as rotateKeyInProcess } from "../../src/cli/rotate-key";
import { TABLES, type Row } from "../../src/cli/tables";
import { openStore } from "../../src/db/open";
import { clientSeal, grantSeal, stateSeal } from "../../src/oauth-client/sealing";
import { createOAuthRepository } from "../../src/oauth-client/repository";
import { createSealer, type Sealer } from "../../src/secrets/sealer";
import { startBearerServer, type BearerServer } from "../peers/bearer-server";
import { fillEveryTable, readTable } from "../support/every-table";
import { connectedConnector, mcpClient, proxyUrl, toolText } from "../support/mcp";
import { captured } from "../support/output";
import { startTestService, type TestService } from "../support/service";
import { sharedPostgres, TEST_STORE } from "../support/store";

const ENTRY = resolve(import.meta.dir, "../../src/index.ts");
let upstream: BearerServer;
beforeAll(() => {
  upstream = startBearerServer("upstream-secret-1");
});
afterAll(() => upstream.stop());

/** Every sealed value in the database file (every sealed column of src/cli/tables.ts), with the context it was sealed under. */
function sealedValues(dbFile: string): [string, string][] {
  const db = new Database(dbFile, { readonly: true });
  try {
    const out: [string, string][] = [];
    for (const entry of TABLES) {
      for (const row of db.query(`SELECT * FROM "${entry.name}"`).all() as Row[]) {
        for (const [column, context] of Object.entries(entry.sealed))
          if (typeof row[column] === "string") out.push([row[column] as string, context(row)]);
      }
    }
    return out;
  } finally {
    db.close();
  }
}
const opens = (sealer: Sealer, [sealed, context]: [string, string]) => {
  try {
    sealer.open(sealed, context);
    return true;
  } catch {
    return false;
  }
};
/** Every value in every table that looks sealed ("v1:…"), whatever its column: none may be missed by a rotation. */
function everySealedLooking(dbFile: string): number {
  const db = new Database(dbFile, { readonly: true });
  try {
    let count = 0;
    for (const { name } of db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as {
      name: string;
    }[]) {
      for (const row of db.query(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]) {
        for (const value of Object.values(row)) if (typeof value === "string" && value.startsWith("v1:")) count++;
      }
    }
    return count;
  } finally {
    db.close();
  }
}
const keyIn = (file: string) => Buffer.from(readFileSync(file, "utf8").trim(), "base64");

/** A service on `dir`'s database with a secret of every kind stored; stopped before it returns. */
async function populate(dir: string, env: Record<string, string> = {}): Promise<{ connectorId: string }> {
  const service: TestService = await startTestService({ DATABASE__PATH: join(dir, "cs.db"), SECRETS__KEY: "", ...env });
  const connectorId = await connectedConnector(service.api, upstream.url, { Authorization: "Bearer upstream-secret-1" });
  await service.api("POST", "/api/v1/connectors", {
    body: { url: "https://client.example/mcp", client_id: "c", client_secret: "client-secret-1" },
  });
  const oauth = createOAuthRepository(service.deps.store);
  const seal = (value: string, context: string) => service.deps.sealer.seal(value, context);
  const context = {
    as: { issuer: "https://as.example" },
    client_id: "c",
    token_endpoint_auth_method: "none" as const,
    resource: "https://x",
    scope: null,
    redirect_uri: "https://cs/cb",
  };
  await oauth.saveClient({
    issuer: "https://as.example",
    redirect_uri: "https://cs/cb",
    client_id: "c",
    client_secret: seal("dcr-secret", clientSeal("https://as.example", "https://cs/cb")),
    token_endpoint_auth_method: "client_secret_basic",
    created_at: 0,
  });
  await oauth.saveState({
    state_digest: "d1",
    connector_id: connectorId,
    secrets: seal('{"code_verifier":"v"}', stateSeal("d1")),
    context: { ...context, redirect_url: null },
    expires_at: Date.now() + 600_000,
    created_at: 0,
  });
  await oauth.saveGrant({
    connector_id: connectorId,
    context,
    secrets: seal('{"access_token":"at"}', grantSeal(connectorId)),
    expires_at: null,
    refresh_at: null,
    failures: 0,
    lease_owner: null,
    lease_until: null,
    updated_at: 0,
  });
  await service.stop();
  return { connectorId };
}

const rotateKey = (env: Record<string, string>) =>
  Bun.spawnSync([process.execPath, ENTRY, "rotate-key"], {
    env: { PATH: process.env.PATH!, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });

describe("connector-service rotate-key", () => {
  test("with the key file: every secret is re-sealed under a new key, none stays under the old one, and the service reads them all", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cs-rotate-"));
    try {
      const { connectorId } = await populate(dir);
      const keyFile = join(dir, "secret.key");
      const oldSealer = createSealer(keyIn(keyFile));
      const before = sealedValues(join(dir, "cs.db"));
      expect(before.length).toBe(5); // stored headers, a connector's client secret, a registered client's, a pending authorization, a grant
      expect(before.every((v) => opens(oldSealer, v))).toBe(true);

      const run = rotateKey({ DATABASE__PATH: join(dir, "cs.db") });
      expect(run.exitCode).toBe(0);
      expect(JSON.parse(run.stdout.toString())).toMatchObject({ msg: "sealing key rotated", values_resealed: 5 });
      expect(everySealedLooking(join(dir, "cs.db"))).toBe(5);
      expect(existsSync(`${keyFile}.next`)).toBe(false);
      const newSealer = createSealer(keyIn(keyFile));
      const after = sealedValues(join(dir, "cs.db"));
      expect(after.filter((v) => opens(newSealer, v)).length).toBe(after.length);
      expect(after.filter((v) => opens(oldSealer, v))).toEqual([]);

      // The service, restarted, sends the stored headers as before.
      const service = await startTestService({ DATABASE__PATH: join(dir, "cs.db"), SECRETS__KEY: "" });
      const { client, close } = await mcpClient(proxyUrl(service, connectorId));
      expect(JSON.parse(toolText(await client.callTool({ name: "whoami", arguments: { name: "n" } }))).authorization).toBe(
        "Bearer upstream-secret-1",
      );
      await close();
      await service.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);

  test("interrupted after the database was re-sealed: the service still opens everything, and a second run finishes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cs-rotate-"));
    try {
      const { connectorId } = await populate(dir);
      const keyFile = join(dir, "secret.key");
      expect(rotateKey({ DATABASE__PATH: join(dir, "cs.db") }).exitCode).toBe(0);
      // Put the state back as a crash between the commit and the rename leaves it: new key in .next, old in secret.key.
      const rotated = readFileSync(keyFile, "utf8");
      await Bun.write(`${keyFile}.next`, rotated);
      const { chmodSync } = await import("node:fs");
      chmodSync(`${keyFile}.next`, 0o600);
      await Bun.write(keyFile, `${Buffer.alloc(32, 7).toString("base64")}\n`);
      chmodSync(keyFile, 0o600);

      const service = await startTestService({ DATABASE__PATH: join(dir, "cs.db"), SECRETS__KEY: "" });
      expect(service.logs.some((l) => l.includes("a key rotation was interrupted"))).toBe(true);
      const { client, close } = await mcpClient(proxyUrl(service, connectorId));
      expect(JSON.parse(toolText(await client.callTool({ name: "whoami", arguments: { name: "n" } }))).authorization).toBe(
        "Bearer upstream-secret-1",
      );
      await close();
      await service.stop();

      expect(rotateKey({ DATABASE__PATH: join(dir, "cs.db") }).exitCode).toBe(0);
      expect(existsSync(`${keyFile}.next`)).toBe(false);
      const final = createSealer(keyIn(keyFile));
      const values = sealedValues(join(dir, "cs.db"));
      expect(values.filter((v) => opens(final, v)).length).toBe(values.length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);

  test("with SECRETS__KEY: the new key comes from SECRETS__NEW_KEY; without it the command says so and changes nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cs-rotate-"));
    try {
      const oldKey = Buffer.alloc(32, 1).toString("base64");
      const newKey = Buffer.alloc(32, 2).toString("base64");
      await populate(dir, { SECRETS__KEY: oldKey });
      const before = sealedValues(join(dir, "cs.db"));
      const missing = rotateKey({ DATABASE__PATH: join(dir, "cs.db"), SECRETS__KEY: oldKey });
      expect(missing.exitCode).toBe(2);
      expect(missing.stderr.toString()).toContain("SECRETS__NEW_KEY");
      expect(sealedValues(join(dir, "cs.db"))).toEqual(before);

      const run = rotateKey({ DATABASE__PATH: join(dir, "cs.db"), SECRETS__KEY: oldKey, SECRETS__NEW_KEY: newKey });
      expect(run.exitCode).toBe(0);
      expect(run.stdout.toString()).toContain("SECRETS__KEY set to the value of SECRETS__NEW_KEY");
      expect(run.stdout.toString()).not.toContain(newKey);
      const values = sealedValues(join(dir, "cs.db"));
      expect(values.filter((v) => opens(createSealer(Buffer.from(newKey, "base64")), v)).length).toBe(values.length);
      expect(values.filter((v) => opens(createSealer(Buffer.from(oldKey, "base64")), v))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);
});

describe("every sealed column of every table (src/cli/tables.ts)", () => {
  test("rotate-key re-seals each one: afterwards it opens under the new key and not the old; no sealed-looking value is left out", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cs-rotate-"));
    try {
      const database =
        TEST_STORE === "postgres"
          ? { DATABASE__URL: await (await sharedPostgres()).createDatabase() }
          : { DATABASE__PATH: join(dir, "cs.db") };
      const open = () =>
        openStore({
          path: database.DATABASE__PATH ?? "",
          url: database.DATABASE__URL,
          maxConnections: 2,
          checkpointThread: false,
        });
      const [oldKey, newKey, thirdKey] = [randomBytes(32), randomBytes(32), randomBytes(32)];
      await fillEveryTable(await open(), oldKey);

      /** Each sealed value, by table and column, and how many values anywhere look sealed ("v1:…"). */
      const sealed = async () => {
        const store = await open();
        try {
          const values: { column: string; value: string; context: string }[] = [];
          let looking = 0;
          for (const entry of TABLES) {
            for (const row of await readTable(store, entry)) {
              for (const value of Object.values(row)) if (typeof value === "string" && value.startsWith("v1:")) looking++;
              for (const [column, context] of Object.entries(entry.sealed)) {
                if (typeof row[column] === "string")
                  values.push({ column: `${entry.name}.${column}`, value: row[column] as string, context: context(row) });
              }
            }
          }
          return { values, looking };
        } finally {
          await store.close();
        }
      };
      const opensUnder = (key: Uint8Array, values: { value: string; context: string }[]) =>
        values.filter((v) => opens(createSealer(key), [v.value, v.context])).length;

      const before = await sealed();
      // Every sealed column of the list holds a value to rotate (the test would prove nothing about an empty one).
      expect([...new Set(before.values.map((v) => v.column))].sort()).toEqual(
        TABLES.flatMap((e) => Object.keys(e.sealed).map((c) => `${e.name}.${c}`)).sort(),
      );
      expect(opensUnder(oldKey, before.values)).toBe(before.values.length);

      const run = await captured("stdout", () =>
        rotateKeyInProcess({ ...database, SECRETS__KEY: oldKey.toString("base64"), SECRETS__NEW_KEY: newKey.toString("base64") }),
      );
      expect(run.code).toBe(0);
      expect(JSON.parse(run.text).values_resealed).toBe(before.values.length);

      const after = await sealed();
      expect(after.values.length).toBe(before.values.length);
      // A sealed column missing from the list would be a value that looks sealed and is not among them.
      expect(after.looking).toBe(after.values.length);
      expect(opensUnder(newKey, after.values)).toBe(after.values.length);
      expect(opensUnder(oldKey, after.values)).toBe(0);

      // Read two rows at a time, every table of more than two rows is re-sealed page after page.
      const store = await open();
      try {
        const [from, to] = [createSealer(newKey), createSealer(thirdKey)];
        expect(
          await store.transaction(resealAll(store, (value, context) => to.seal(from.open(value, context), context), 2)),
        ).toBe(before.values.length);
      } finally {
        await store.close();
      }
      const third = await sealed();
      expect(opensUnder(thirdKey, third.values)).toBe(third.values.length);
      expect(opensUnder(newKey, third.values)).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
