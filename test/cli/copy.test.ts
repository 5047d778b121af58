import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { copy } from "../../src/cli/copy";
import { startEverything } from "../peers/everything";
import type { Peer } from "../peers/ports";
import { mcpClient, toolText } from "../support/mcp";
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
  const written: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string) => (written.push(String(chunk)), true)) as typeof process.stdout.write;
  try {
    expect(await copy(["--from", from, "--to", to])).toBe(0);
  } finally {
    process.stdout.write = write;
  }
  return JSON.parse(written.join("")).rows;
}

/** What a user of the service sees of its data. */
async function contents(service: TestService) {
  const connectors = (await service.api("GET", "/api/v1/connectors?limit=100")).body.items.map((c: Record<string, unknown>) => [c.url, c.state, c.header_names]);
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
    connectorId = (await source.api("POST", "/api/v1/connectors", { body: { url: everything.url, metadata: { name: "Everything" } } })).body.id;
    expect((await source.api("POST", `/api/v1/connectors/${connectorId}/connect`, { body: { headers: { "x-api-key": "sealed-at-rest" } } })).body.state).toBe("connected");
    await source.api("POST", "/api/v1/connectors", { body: { url: "https://never-connected.example/mcp" } });
    const card = { name: "Copied agent", description: "d", url: "https://agent.example/a2a", version: "1", capabilities: {}, defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"], skills: [] };
    expect((await source.api("POST", "/api/v1/providers", { body: { agent_card: card } })).status).toBe(201);
  } finally {
    await source.stop();
  }

  const postgres = await (await sharedPostgres()).createDatabase();
  const rows = await runCopy(sqliteFile, postgres);
  expect(rows).toEqual({ users: 2, api_tokens: 1, connectors: 2, oauth_clients: 0, oauth_states: 0, oauth_grants: 0, providers: 1 });
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
    expect((await moved.api("GET", "/api/v1/users/me", { as: { username: "lee", password: "lee-password-1" } })).status).toBe(200);
    const { client, close } = await mcpClient(`${moved.url}/api/v1/connectors/${connectorId}/mcp`, ADMIN);
    expect(toolText(await client.callTool({ name: "echo", arguments: { message: "moved" } }))).toBe("Echo: moved");
    await close();
  } finally {
    await moved.stop();
  }

  // And back down, into a new SQLite file.
  const back = join(dir, "back.db");
  expect(await runCopy(postgres, back)).toEqual(rows);
  const restored = await startTestService({ DATABASE__PATH: back, SECRETS__KEY: KEY });
  try {
    expect(await contents(restored)).toEqual(before);
  } finally {
    await restored.stop();
  }
}, 60_000);

test("copy says how to use it when its arguments are wrong", async () => {
  expect(await copy(["--from", join(dir, "x.db")])).toBe(2);
  expect(await copy(["--from", "a.db", "--to", "a.db"])).toBe(2);
  expect(await copy(["--from", join(dir, "missing.db"), "--to", join(dir, "y.db")])).toBe(2);
});
