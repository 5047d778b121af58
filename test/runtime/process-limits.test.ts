import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROBE_SERVER } from "../peers/probe-server";
import { expectProblem, type Credentials } from "../support/api";
import { ADMIN, startTestService, type TestService } from "../support/service";
import { waitFor } from "../support/wait";

// The probe (a real stdio MCP server), started through a shell that says so on stderr first: the service logs each
// line, so every process the local driver starts is counted, however briefly it lived.
const PRESETS = JSON.stringify([
  {
    url: "mcp+stdio://probe",
    metadata: { name: "Probe" },
    stdio: {
      image: "example/probe",
      command: ["sh", "-c", 'echo probe-started >&2; exec "$0" "$@"', process.execPath, PROBE_SERVER],
    },
  },
]);

const dir = mkdtempSync(join(tmpdir(), "cs-process-limits-"));
let service: TestService;
let alice: Credentials;
let bob: Credentials;
beforeAll(async () => {
  service = await startTestService({
    CONNECTOR__PRESETS: PRESETS,
    DATABASE__PATH: join(dir, "cs.db"), // the local driver needs SQLite (a process serves one replica)
    RUNTIME__MAX_PROCESSES_PER_USER: "2",
    RUNTIME__MAX_PROCESSES: "3",
  });
  alice = (await service.user("alice")).basic;
  bob = (await service.user("bob")).basic;
}, 30_000);
afterAll(async () => {
  await service.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** This process's children running the probe (with the sandbox, the bwrap around it). */
const running = () =>
  Bun.spawnSync(["pgrep", "-P", String(process.pid), "-f", PROBE_SERVER])
    .stdout.toString()
    .split("\n")
    .filter(Boolean).length;
/** Processes the local driver started so far. */
const started = () => service.logs.filter((line) => line.includes('"line":"probe-started"')).length;

async function connected(as: Credentials): Promise<string> {
  const created = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://probe" }, as });
  const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {}, as });
  expect(res.body.state).toBe("connected");
  // The readiness handshake's process holds its place until it has exited.
  await waitFor("the readiness process to exit", () => running() === 0, 10_000);
  return created.body.id;
}

const mcp = (id: string, as: Credentials, body: unknown, headers: Record<string, string> = {}) =>
  service.api("POST", `/api/v1/connectors/${id}/mcp`, {
    body,
    as,
    headers: { accept: "application/json, text/event-stream", ...headers },
  });
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

/** Starts an MCP session (one server process); its id. */
async function session(id: string, as: Credentials): Promise<string> {
  const res = await mcp(id, as, INITIALIZE);
  if (res.status !== 200) throw new Error(`initialize: ${res.status} ${res.text}`);
  return res.headers.get("mcp-session-id")!;
}

describe("managed server processes (local driver)", () => {
  let aliceConnector: string;
  let bobConnector: string;
  beforeAll(async () => {
    aliceConnector = await connected(alice);
    bobConnector = await connected(bob);
  }, 30_000);

  test("a POST without a session that is not an initialize starts no process", async () => {
    const before = started();
    const refused = [
      await mcp(aliceConnector, alice, { jsonrpc: "2.0", id: 1, method: "tools/list" }),
      await mcp(aliceConnector, alice, { jsonrpc: "2.0", method: "notifications/initialized" }),
      await mcp(aliceConnector, alice, [INITIALIZE, { jsonrpc: "2.0", id: 2, method: "tools/list" }]),
      await mcp(aliceConnector, alice, { jsonrpc: "2.0", id: 1, method: "initialize", params: {} }), // not a valid initialize
    ];
    // A body that is not JSON either.
    refused.push(await mcp(aliceConnector, alice, undefined, { "content-type": "text/plain" }));
    expect(refused.map((r) => r.status)).toEqual([400, 400, 400, 400, 415]);
    expect(started()).toBe(before);
    expect(refused[0]!.body.error.message).toContain("only an initialize request starts a session");
    // An initialize does start one.
    const id = await session(aliceConnector, alice);
    expect(started()).toBe(before + 1);
    await service.api("DELETE", `/api/v1/connectors/${aliceConnector}/mcp`, { as: alice, headers: { "mcp-session-id": id } });
    await waitFor("the session's process to exit", () => running() === 0, 10_000);
  });

  test("a user over RUNTIME__MAX_PROCESSES_PER_USER gets a 429 while another user still gets a process; ending a session frees its place", async () => {
    const first = await session(aliceConnector, alice);
    await session(aliceConnector, alice);
    const over = await mcp(aliceConnector, alice, INITIALIZE);
    expectProblem(over, 429);
    expect(over.headers.get("retry-after")).toBe("5");
    expect(over.body.detail).toContain("RUNTIME__MAX_PROCESSES_PER_USER");
    expect(over.body.detail).toContain("end sessions you no longer use");
    // The owner's processes count, whoever calls: the administrator on alice's connector is refused too.
    expectProblem(await mcp(aliceConnector, ADMIN, INITIALIZE), 429);
    // Connecting another of alice's connectors needs a process for its readiness check: 429, and nothing changes.
    const other = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://probe" }, as: alice });
    expectProblem(await service.api("POST", `/api/v1/connectors/${other.body.id}/connect`, { body: {}, as: alice }), 429);
    expect((await service.api("GET", `/api/v1/connectors/${other.body.id}`, { as: alice })).body.state).toBe("created");
    expect(running()).toBe(2);

    // Bob is not held back by alice's processes...
    const bobs = await session(bobConnector, bob);
    // ...but the service as a whole is by RUNTIME__MAX_PROCESSES (3 running).
    const full = await mcp(bobConnector, bob, INITIALIZE);
    expectProblem(full, 429);
    expect(full.body.detail).toContain("RUNTIME__MAX_PROCESSES)");
    expect(full.headers.get("retry-after")).toBe("30");

    // Alice ends a session (DELETE): once its process is gone, she may start another.
    const ended = await service.api("DELETE", `/api/v1/connectors/${aliceConnector}/mcp`, {
      as: alice,
      headers: { "mcp-session-id": first },
    });
    expect(ended.status).toBe(200);
    await waitFor("alice's place to be free", async () => (await mcp(aliceConnector, alice, INITIALIZE)).status === 200, 10_000);
    expect(running()).toBe(3);
    await service.api("DELETE", `/api/v1/connectors/${bobConnector}/mcp`, { as: bob, headers: { "mcp-session-id": bobs } });
  });
});
