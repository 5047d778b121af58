import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSealer } from "../../src/secrets/sealer";
import { startBearerServer, type BearerServer } from "../peers/bearer-server";
import { apiClient, startTestService, type TestService } from "../support/service";

const SECRETS = {
  header: "hdr-9f8e7d6c5b4a-plaintext",
  clientSecret: "cs-1a2b3c4d5e6f-plaintext",
  accessToken: "at-0a9b8c7d6e5f-plaintext",
  userPassword: "pw-5e4d3c2b1a-plaintext",
};

let dir: string;
let service: TestService;
let upstream: BearerServer;
beforeAll(async () => {
  upstream = startBearerServer(SECRETS.header);
  dir = mkdtempSync(join(tmpdir(), "cs-secrets-"));
  // No SECRETS__KEY: the key file beside the database is created.
  service = await startTestService({ DATABASE__PATH: join(dir, "cs.db"), SECRETS__KEY: "" });
  const user = (await service.user("sam")).basic;
  const sam = apiClient(service.url, { username: "sam", password: user.password });
  await service.api("POST", "/api/v1/users", { body: { username: "pat", password: SECRETS.userPassword } });
  const c = await sam("POST", "/api/v1/connectors", {
    body: { url: upstream.url, client_id: "cid", client_secret: SECRETS.clientSecret },
  });
  const connected = await sam("POST", `/api/v1/connectors/${c.body.id}/connect`, {
    body: { headers: { Authorization: `Bearer ${SECRETS.header}` }, accessToken: SECRETS.accessToken },
  });
  if (connected.body?.state !== "connected") throw new Error(`connect failed: ${connected.text}`);
  const token = await sam("POST", "/api/v1/tokens", { body: { name: "t" } });
  (SECRETS as Record<string, string>).apiToken = token.body.token;
});
afterAll(async () => {
  await upstream.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("no secret is in the SQLite files in plaintext, and the key file is private", async () => {
  await service.stop();
  const files = readdirSync(dir).filter((f) => f.startsWith("cs.db"));
  expect(files).toContain("cs.db");
  const bytes = files.map((f) => readFileSync(join(dir, f)).toString("latin1")).join("");
  // Boolean checks: a failed toContain would print the whole database file.
  expect(bytes.includes(upstream.url)).toBe(true);
  for (const secret of Object.values(SECRETS))
    expect({ secret, found: bytes.includes(secret) }).toEqual({ secret, found: false });
  expect(statSync(join(dir, "secret.key")).mode & 0o777).toBe(0o600);
});

test("no response or log line carries a secret", () => {
  const logs = service.logs.join("\n");
  expect(logs).toContain('"msg":"request"');
  for (const secret of Object.values(SECRETS)) expect(logs).not.toContain(secret);
});

test("sealed values open only with their key and their own context", () => {
  const sealer = createSealer(new Uint8Array(32).fill(1));
  const sealed = sealer.seal("value", "connectors/a/headers");
  expect(sealed).not.toContain("value");
  expect(sealer.open(sealed, "connectors/a/headers")).toBe("value");
  expect(() => sealer.open(sealed, "connectors/b/headers")).toThrow();
  expect(() => createSealer(new Uint8Array(32).fill(2)).open(sealed, "connectors/a/headers")).toThrow();
  expect(sealer.seal("value", "c")).not.toBe(sealer.seal("value", "c"));
});
