import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGateway } from "../../src/gateway/gateway";
import { createLogger } from "../../src/observability/logger";
import { createLocalRuntime } from "../../src/runtime/local";
import { createProcessLimits } from "../../src/runtime/process-limits";
import { DeploymentFailed } from "../../src/runtime/runtime";
import { EVERYTHING } from "../peers/everything";
import { mcpClient, proxyUrl, toolText as text } from "../support/mcp";
import { waitFor } from "../support/wait";
import { startTestService, type TestService } from "../support/service";
import { expectProblem } from "../support/api";

const PRESETS = JSON.stringify([
  {
    url: "mcp+stdio://everything",
    metadata: { name: "Everything", description: "The reference MCP server, run locally" },
    stdio: {
      image: "example/server-everything:latest",
      command: ["node", EVERYTHING],
      args: ["stdio"],
      env: { EVERYTHING_MODE: "managed" },
      access_token_env_name: "EVERYTHING_TOKEN",
    },
  },
  {
    url: "mcp+stdio://broken",
    metadata: { name: "Broken" },
    stdio: { image: "example/broken", command: ["node", "-e", "console.error('cannot start: missing config'); process.exit(3)"] },
  },
]);

/** This process's children running server-everything over stdio (the local driver's managed servers). */
function managedProcesses(): number[] {
  const out = Bun.spawnSync([
    "pgrep",
    "-P",
    String(process.pid),
    "-f",
    "server-everything/dist/index.js stdio",
  ]).stdout.toString();
  return out.split("\n").filter(Boolean).map(Number);
}

const dir = mkdtempSync(join(tmpdir(), "cs-local-"));
let service: TestService;
// A fixed key: the restart test opens what the first start sealed.
const env = {
  CONNECTOR__PRESETS: PRESETS,
  DATABASE__PATH: join(dir, "cs.db"),
  SCHEDULER__INTERVAL_SECONDS: "0.5",
  SECRETS__KEY: Buffer.alloc(32, 9).toString("base64"),
};
beforeAll(async () => {
  service = await startTestService(env);
});
afterAll(async () => {
  await service.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** MCP clients a test opened; each test starts with no connector, no client and no managed process. */
const clients: { close(): Promise<void> }[] = [];
async function client(id: string) {
  const opened = await mcpClient(proxyUrl(service, id));
  clients.push(opened);
  return opened;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  for (const { id } of (await service.api("GET", "/api/v1/connectors?limit=100")).body.items)
    await service.api("DELETE", `/api/v1/connectors/${id}`);
  await waitFor("no managed process", () => managedProcesses().length === 0, 8_000);
});

async function connectManaged(accessToken?: string): Promise<string> {
  const created = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://everything" } });
  expect(created.body.preset).toBe("mcp+stdio://everything");
  const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, {
    body: accessToken ? { accessToken } : {},
  });
  expect(res.status).toBe(200);
  expect(res.body.state).toBe("connected");
  return created.body.id;
}

describe("the local driver", () => {
  test("connect runs the preset's command; tools work through the proxy; the token is in its environment and nothing of the service's is", async () => {
    const id = await connectManaged("token-for-the-server");
    const { client: mcp } = await client(id);
    expect(text(await mcp.callTool({ name: "echo", arguments: { message: "managed" } }))).toBe("Echo: managed");
    const env = JSON.parse(text(await mcp.callTool({ name: "get-env", arguments: {} })));
    expect(env.EVERYTHING_TOKEN).toBe("token-for-the-server");
    expect(env.EVERYTHING_MODE).toBe("managed");
    for (const name of Object.keys(env)) expect(name).not.toMatch(/^(SECRETS|AUTH|DATABASE|CONNECTOR|SERVER)__/);
    // The loopback gateway answers only the service (another user of the machine could reach the port).
    const direct = await fetch(service.deps.runtime.endpoint(id)!, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{}",
    });
    expect(direct.status).toBe(401);
    expect((await service.api("DELETE", `/api/v1/connectors/${id}`)).status).toBe(204);
    await waitFor("no managed process after delete", () => managedProcesses().length === 0, 8_000);
    // Started and stopped, each logged with the connector; never with its token.
    const lines = await waitFor(
      "the deployment's log lines",
      () => {
        const mine = service.logs.map((l) => JSON.parse(l)).filter((l) => l.connector_id === id && /^deployment /.test(l.msg));
        return mine.length >= 2 && mine;
      },
      8_000,
    );
    expect(lines.map((l) => l.msg)).toEqual(["deployment started", "deployment stopped"]);
    expect(lines[0].why).toBe("connect");
    expect(service.logs.join("\n")).not.toContain("token-for-the-server");
  });

  test("two concurrent sessions do not interfere: each has its own server process", async () => {
    const id = await connectManaged();
    const [a, b] = await Promise.all([client(id), client(id)]);
    await waitFor("one process per session", () => managedProcesses().length === 2, 5_000);
    const [ra, rb] = await Promise.all([
      a.client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } }),
      b.client.callTool({ name: "get-sum", arguments: { a: 20, b: 30 } }),
    ]);
    expect(text(ra)).toContain("5");
    expect(text(rb)).toContain("50");
  });

  test("a killed server process ends only its session; a new session gets a new process", async () => {
    const id = await connectManaged();
    const first = await client(id);
    await waitFor("one process", () => managedProcesses().length === 1, 8_000);
    const [pid] = managedProcesses();
    process.kill(pid!, "SIGKILL");
    await waitFor("the session to end", () => managedProcesses().length === 0, 5_000);
    await expect(first.client.callTool({ name: "echo", arguments: { message: "x" } })).rejects.toThrow();
    const second = await client(id);
    expect(text(await second.client.callTool({ name: "echo", arguments: { message: "again" } }))).toBe("Echo: again");
    expect(managedProcesses()).toHaveLength(1);
    expect(managedProcesses()[0]).not.toBe(pid);
  });

  test("disconnect leaves no process behind; connecting again replaces the deployment and its sessions", async () => {
    const id = await connectManaged();
    const { client: mcp } = await client(id);
    await mcp.callTool({ name: "echo", arguments: { message: "x" } });
    await waitFor("one process", () => managedProcesses().length === 1, 8_000);
    // Connect again while a session is open: the old deployment goes, the new one serves.
    expect((await service.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} })).body.state).toBe("connected");
    await waitFor("the old session's process to go", () => managedProcesses().length === 0, 8_000);
    await client(id);
    await waitFor("one process", () => managedProcesses().length === 1, 8_000);
    const off = await service.api("POST", `/api/v1/connectors/${id}/disconnect`);
    expect(off.body.state).toBe("disconnected");
    await waitFor("no managed process", () => managedProcesses().length === 0, 8_000);
    expectProblem(await service.api("POST", `/api/v1/connectors/${id}/mcp`, { body: {} }), 409);
  });

  test("a server that never becomes ready: 502, and the reason says what happened", async () => {
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://broken" } });
    const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expectProblem(res, 502);
    const after = (await service.api("GET", `/api/v1/connectors/${created.body.id}`)).body;
    expect(after.state).toBe("disconnected");
    expect(after.disconnect_reason).toContain("The managed server could not be started");
    // The server's own last words make it into the reason.
    expect(after.disconnect_reason).toContain("cannot start: missing config");
  });

  test("headers do not apply to a managed connector", async () => {
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://everything" } });
    expectProblem(
      await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: { headers: { "x-key": "v" } } }),
      422,
    );
  });

  test("after a restart, connected managed connectors run again, with their token", async () => {
    const id = await connectManaged("persisted-token");
    await client(id);
    await waitFor("one process", () => managedProcesses().length === 1, 8_000);
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
    await service.stop();
    expect(managedProcesses()).toEqual([]);
    service = await startTestService(env);
    const after = (await service.api("GET", `/api/v1/connectors/${id}`)).body;
    expect({ state: after.state, reason: after.disconnect_reason }).toEqual({ state: "connected", reason: null });
    const { client: mcp } = await client(id);
    const envOfServer = JSON.parse(text(await mcp.callTool({ name: "get-env", arguments: {} })));
    expect(envOfServer.EVERYTHING_TOKEN).toBe("persisted-token");
  });
});

// Idle times of a second: shorter ones took a busy machine's pause between `initialize` and `notifications/initialized`
// for idleness (the session was swept before the client had finished connecting).
test("an idle session is closed with its process; the client then starts a new one", async () => {
  const log = createLogger({ level: "error", write: () => {} });
  const gateway = createGateway({ stdio: { command: "node", args: [EVERYTHING, "stdio"], env: {} }, log, idleSessionMs: 1_000 });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: gateway.fetch });
  const { client } = await mcpClient(`http://127.0.0.1:${server.port}/mcp`, null);
  expect(gateway.sessionCount()).toBe(1);
  await waitFor("the idle sweep", () => gateway.sessionCount() === 0, 5_000);
  await expect(client.callTool({ name: "echo", arguments: { message: "late" } })).rejects.toThrow(/404|Session not found/);
  await gateway.close();
  await server.stop(true);
});

test("a session answering a call longer than the idle time is not swept in the middle of it", async () => {
  const log = createLogger({ level: "error", write: () => {} });
  const gateway = createGateway({ stdio: { command: "node", args: [EVERYTHING, "stdio"], env: {} }, log, idleSessionMs: 1_000 });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: gateway.fetch });
  const { client } = await mcpClient(`http://127.0.0.1:${server.port}/mcp`, null);
  // Three times the idle time, a sweep every second meanwhile: the call ends with its answer, not a closed session.
  const result = await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 3, steps: 3 } });
  expect(result.isError).toBeFalsy();
  expect(gateway.sessionCount()).toBe(1);
  await client.close();
  await gateway.close();
  await server.stop(true);
});

test("an image-only preset needs podman or docker on PATH, else the reason says so", async () => {
  const limits = createProcessLimits({ maxProcessesPerUser: 1, maxProcesses: 1 });
  const runtime = createLocalRuntime({
    log: createLogger({ level: "error", write: () => {} }),
    sandbox: { kind: "none" },
    limits,
    which: () => null,
  });
  const failure = await runtime
    .deploy({ connectorId: "c", ownerId: "u", stdio: { image: "example/only-an-image:1" }, accessToken: null })
    .catch((e) => e);
  expect(failure).toBeInstanceOf(DeploymentFailed);
  expect(failure.message).toContain("neither podman nor docker is on PATH");
  expect(await runtime.list()).toEqual(new Map());
  // The place the readiness process would have had is free again.
  expect(limits.count("u")).toEqual({ user: 0, total: 0 });
});
