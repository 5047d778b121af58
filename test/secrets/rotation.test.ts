import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { sealContext, SEALED_COLUMNS } from "../../src/connectors/sealing";
import { clientSeal, grantSeal, stateSeal } from "../../src/oauth/sealing";
import { createOAuthRepository } from "../../src/oauth/repository";
import { createSealer, type Sealer } from "../../src/secrets/sealer";
import { startBearerServer, type BearerServer } from "../peers/bearer-server";
import { connectedConnector, mcpClient, proxyUrl, toolText } from "../support/mcp";
import { startTestService, type TestService } from "../support/service";

const ENTRY = resolve(import.meta.dir, "../../src/index.ts");
let upstream: BearerServer;
beforeAll(() => {
  upstream = startBearerServer("upstream-secret-1");
});
afterAll(() => upstream.stop());

/** Every sealed value in the database file, with the context it was sealed under. */
function sealedValues(dbFile: string): [string, string][] {
  const db = new Database(dbFile, { readonly: true });
  try {
    const out: [string, string][] = [];
    for (const row of db.query("SELECT * FROM connectors").all() as Record<string, string | null>[]) {
      for (const column of SEALED_COLUMNS) if (row[column]) out.push([row[column]!, sealContext(row.id!, column)]);
    }
    for (const row of db.query("SELECT issuer, redirect_uri, client_secret FROM oauth_clients WHERE client_secret IS NOT NULL").all() as Record<string, string>[]) {
      out.push([row.client_secret!, clientSeal(row.issuer!, row.redirect_uri!)]);
    }
    for (const row of db.query("SELECT state_digest, secrets FROM oauth_states").all() as Record<string, string>[]) out.push([row.secrets!, stateSeal(row.state_digest!)]);
    for (const row of db.query("SELECT connector_id, secrets FROM oauth_grants").all() as Record<string, string>[]) out.push([row.secrets!, grantSeal(row.connector_id!)]);
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
    for (const { name } of db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[]) {
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
  await service.api("POST", "/api/v1/connectors", { body: { url: "https://client.example/mcp", client_id: "c", client_secret: "client-secret-1" } });
  const oauth = createOAuthRepository(service.deps.store);
  const seal = (value: string, context: string) => service.deps.sealer.seal(value, context);
  const context = { as: { issuer: "https://as.example" }, client_id: "c", token_endpoint_auth_method: "none" as const, resource: "https://x", scope: null, redirect_uri: "https://cs/cb" };
  await oauth.saveClient({ issuer: "https://as.example", redirect_uri: "https://cs/cb", client_id: "c", client_secret: seal("dcr-secret", clientSeal("https://as.example", "https://cs/cb")), token_endpoint_auth_method: "client_secret_basic", created_at: 0 });
  await oauth.saveState({ state_digest: "d1", connector_id: connectorId, secrets: seal('{"code_verifier":"v"}', stateSeal("d1")), context: { ...context, redirect_url: null }, expires_at: Date.now() + 600_000, created_at: 0 });
  await oauth.saveGrant({ connector_id: connectorId, context, secrets: seal('{"access_token":"at"}', grantSeal(connectorId)), expires_at: null, refresh_at: null, failures: 0, lease_owner: null, lease_until: null, updated_at: 0 });
  await service.stop();
  return { connectorId };
}

const rotateKey = (env: Record<string, string>) =>
  Bun.spawnSync([process.execPath, ENTRY, "rotate-key"], { env: { PATH: process.env.PATH!, ...env }, stdout: "pipe", stderr: "pipe" });

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
      expect(JSON.parse(toolText(await client.callTool({ name: "whoami", arguments: { name: "n" } }))).authorization).toBe("Bearer upstream-secret-1");
      await close();
      await service.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

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
      expect(JSON.parse(toolText(await client.callTool({ name: "whoami", arguments: { name: "n" } }))).authorization).toBe("Bearer upstream-secret-1");
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
  });

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
  });
});
