import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createSealedColumns } from "../../src/connectors/sealed-columns";
import { createConnectorRepository, type ConnectorRow } from "../../src/connectors/repository";
import { createTransitions, DISCONNECT_REQUESTED } from "../../src/connectors/transitions";
import { openSqliteStore, type SqliteStore } from "../../src/db/sqlite";
import { createLogger } from "../../src/observability/logger";
import { createSealer } from "../../src/secrets/sealer";

// The state machine on a real (in-memory) database: each transition writes the whole connection.
let database: SqliteStore;
const sealer = createSealer(randomBytes(32));
const sealed = createSealedColumns(sealer);
let now = 1_000;
const ended: string[] = [];
const logs: string[] = [];
const log = createLogger({ level: "debug", write: (line) => logs.push(line) });

beforeAll(() => {
  database = openSqliteStore(":memory:");
  database.sqlite
    .query("INSERT INTO users (id, username, password_hash, role, created_at, updated_at) VALUES ('u', 'u', 'h', 'user', 0, 0)")
    .run();
});
afterAll(() => database.close());

async function fresh() {
  const connectors = createConnectorRepository(database, () => now);
  const transitions = createTransitions({
    connectorRows: connectors,
    sealer,
    clock: () => now,
    log,
    ended: (row) => void ended.push(row.id),
  });
  const row: ConnectorRow = {
    id: Bun.randomUUIDv7(),
    owner_id: "u",
    url: "https://mcp.example/mcp",
    state: "created",
    auth_method: "none",
    disconnect_reason: null,
    metadata: {},
    preset_url: null,
    client_id: null,
    client_secret: null,
    headers: null,
    header_names: null,
    access_token: null,
    authorization_url: null,
    redirect_url: null,
    tool_policy: null,
    tools_pinned_at: null,
    tool_changes: null,
    protocol_versions: null,
    rate_limits: null,
    created_at: now,
    updated_at: now,
  };
  await connectors.insert(row, 1_000_000);
  return { connectors, transitions, row };
}

/** The columns a connection owns, as stored. */
const connection = (row: ConnectorRow) => ({
  state: row.state,
  auth_method: row.auth_method,
  disconnect_reason: row.disconnect_reason,
  headers: row.headers === null ? null : "sealed",
  header_names: row.header_names,
  access_token: row.access_token === null ? null : "sealed",
  authorization_url: row.authorization_url,
  redirect_url: row.redirect_url,
});

describe("every change of state is logged", () => {
  test("with the connector, its owner, both states and the reason; never a credential", async () => {
    const { transitions, row } = await fresh();
    const from = logs.length;
    const connected = await transitions.connected(row, { method: "headers", headers: { "X-Key": "logged-never-1" } }, null);
    await transitions.disconnected(connected, "The MCP server refused the stored credentials (HTTP 401)");
    await transitions.deleted({ ...connected, state: "disconnected" });
    const lines = logs.slice(from).map((line) => JSON.parse(line));
    expect(lines.map((l) => [l.level, l.msg, l.from, l.to])).toEqual([
      ["info", "connector state changed", "created", "connected"],
      ["warn", "connector disconnected", "connected", "disconnected"],
      ["info", "connector deleted", "disconnected", "deleted"],
    ]);
    expect(lines.every((l) => l.connector_id === row.id && l.owner_id === "u")).toBe(true);
    expect(lines[1].reason).toContain("HTTP 401");
    expect(logs.slice(from).join("\n")).not.toContain("logged-never-1");
  });
});

describe("each transition sets the columns of its state and clears every other", () => {
  test("connected with headers: sealed headers and their names, nothing else", async () => {
    const { transitions, row } = await fresh();
    const pending = await transitions.authRequired(row, "https://as.example/authorize?x", "http://cs.test/done", null);
    now += 1;
    const connected = await transitions.connected(pending, { method: "headers", headers: { "X-Key": "secret-1" } }, null);
    expect(connection(connected)).toEqual({
      state: "connected",
      auth_method: "headers",
      disconnect_reason: null,
      headers: "sealed",
      header_names: ["X-Key"],
      access_token: null,
      authorization_url: null,
      redirect_url: null,
    });
    expect(connected.headers).not.toContain("secret-1");
    expect(sealed.headers(connected)).toEqual({ "X-Key": "secret-1" });
    expect(connected.updated_at).toBe(now);
  });

  test("auth_required: the authorization URL and redirect; the headers of an earlier connection are gone", async () => {
    const { transitions, row } = await fresh();
    const connected = await transitions.connected(row, { method: "headers", headers: { "X-Key": "v" }, accessToken: "t" }, null);
    const pending = await transitions.authRequired(
      connected,
      "https://as.example/authorize?y",
      "http://cs.test/back",
      "wider scope",
    );
    expect(connection(pending)).toEqual({
      state: "auth_required",
      auth_method: "none",
      disconnect_reason: "wider scope",
      headers: null,
      header_names: null,
      access_token: null,
      authorization_url: "https://as.example/authorize?y",
      redirect_url: "http://cs.test/back",
    });
  });

  test("connected by OAuth: no stored headers or token, the redirect kept as the caller says", async () => {
    const { transitions, row } = await fresh();
    const pending = await transitions.authRequired(row, "https://as.example/a", "http://cs.test/r", null);
    const connected = await transitions.connected(pending, { method: "oauth" }, pending.redirect_url);
    expect(connection(connected)).toMatchObject({
      state: "connected",
      auth_method: "oauth",
      authorization_url: null,
      redirect_url: "http://cs.test/r",
      headers: null,
    });
  });

  test("a managed connector keeps its access token sealed, to start its server again after a restart", async () => {
    const { transitions, row } = await fresh();
    const connected = await transitions.connected(row, { method: "none", accessToken: "for-the-server" }, null);
    expect(connection(connected)).toMatchObject({ auth_method: "none", access_token: "sealed", headers: null });
    expect(sealed.accessToken(connected)).toBe("for-the-server");
  });

  test("disconnected: the reason; every credential gone", async () => {
    const { transitions, row } = await fresh();
    const connected = await transitions.connected(
      row,
      { method: "headers", headers: { "X-Key": "v" }, accessToken: "t" },
      "http://cs.test/r",
    );
    const off = await transitions.disconnected(connected, DISCONNECT_REQUESTED);
    expect(connection(off)).toEqual({
      state: "disconnected",
      auth_method: "none",
      disconnect_reason: DISCONNECT_REQUESTED,
      headers: null,
      header_names: null,
      access_token: null,
      authorization_url: null,
      redirect_url: "http://cs.test/r",
    });
  });
});

describe("what lives outside the row goes when a connection ends", () => {
  test("ended is called on disconnected, auth_required and delete, never on connected", async () => {
    const { transitions, row } = await fresh();
    ended.length = 0;
    const connected = await transitions.connected(row, { method: "none" }, null);
    expect(ended).toEqual([]);
    await transitions.authRequired(connected, "https://as.example/a", null, null);
    const off = await transitions.disconnected(connected, "gone");
    await transitions.deleted(off);
    expect(ended).toEqual([row.id, row.id, row.id]);
  });
});

describe("asynchronous failures", () => {
  test("disconnectIfConnected leaves a connector that is no longer connected, and its reason, alone", async () => {
    const { transitions, connectors, row } = await fresh();
    const connected = await transitions.connected(row, { method: "none" }, null);
    expect(await transitions.disconnectIfConnected(row.id, "refresh failed")).toBe(true);
    expect((await connectors.findById(row.id))!.disconnect_reason).toBe("refresh failed");
    expect(await transitions.disconnectIfConnected(row.id, "a later failure")).toBe(false);
    expect((await connectors.findById(row.id))!.disconnect_reason).toBe("refresh failed");
    void connected;
  });

  test("a transition of a connector deleted meanwhile is a 404, not a write", async () => {
    const { transitions, row } = await fresh();
    await transitions.deleted(row);
    await expect(transitions.connected(row, { method: "none" }, null)).rejects.toThrow(`No connector ${row.id}`);
    expect(await transitions.disconnectIfConnected(row.id, "x")).toBe(false);
  });
});
