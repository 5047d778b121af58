import { afterAll, beforeAll, expect, test } from "bun:test";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { SESSION_NOT_FOUND } from "../../src/gateway/json-rpc";
import { createSharedGateway } from "../../src/gateway/shared";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";
import { startFifoSidecar, type FifoSidecar } from "../peers/fifo-sidecar";
import { expectIsolatedSessions, mcpClient } from "../support/mcp";
import { expectBothEras } from "../support/modern";
import { waitFor } from "../support/wait";

test("one shared server process: ids and progress tokens are rewritten, so concurrent sessions do not interfere; an unknown session is a 404 with the same code", async () => {
  const log = createLogger({ level: "error", write: () => {} });
  const server = new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" });
  const gateway = createSharedGateway({ server, log });
  await gateway.ready();
  const http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: gateway.fetch });
  const url = `http://127.0.0.1:${http.port}/mcp`;
  const { client, close } = await mcpClient(url, null);
  expect(client.getServerVersion()?.name).toContain("everything");
  await close();
  await expectIsolatedSessions(url);
  expect((await fetch(`http://127.0.0.1:${http.port}/healthz`)).status).toBe(200);
  // The same answer to an unknown session as the per-session gateway's (and the MCP SDK's own transport).
  const unknown = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": "nope" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(unknown.status).toBe(404);
  expect((await unknown.json()).error.code).toBe(SESSION_NOT_FOUND);
  await gateway.close();
  await http.stop(true);
});

test("sessions are bounded: at most maxSessions are kept, and an idle one is closed (clients that never DELETE leave theirs behind)", async () => {
  const log = createLogger({ level: "error", write: () => {} });
  const server = new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" });
  const gateway = createSharedGateway({ server, log, maxSessions: 2, idleSessionMs: 300 });
  await gateway.ready();
  const http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: gateway.fetch });
  const url = `http://127.0.0.1:${http.port}/mcp`;
  const [a] = await Promise.all([mcpClient(url, null), mcpClient(url, null)]);
  expect(gateway.sessionCount()).toBe(2);
  await expect(mcpClient(url, null)).rejects.toThrow(/503|Too many sessions/);
  await waitFor("the idle sweep", () => gateway.sessionCount() === 0, 5_000);
  await expect(a.client.listTools()).rejects.toThrow(/404|Session not found/);
  expect(gateway.sessionCount()).toBe(0);
  await mcpClient(url, null); // room again
  await gateway.close();
  await http.stop(true);
});

// The Kubernetes pod's wiring, on loopback (test/peers/fifo-sidecar.ts).
let sidecar: FifoSidecar;
beforeAll(async () => {
  sidecar = await startFifoSidecar();
});
afterAll(() => sidecar.stop());

test("the sidecar over named pipes serves 2026-07-28 clients too, next to 2025 sessions (real sockets)", async () => {
  await expectBothEras(sidecar.url, (request) => fetch(request));
});

test("the gateway over named pipes: ready once the server answered, sessions isolated; it exits when the server does", async () => {
  await expectIsolatedSessions(sidecar.url);
  sidecar.server.kill("SIGKILL");
  expect(await sidecar.gateway.exited).toBe(1);
});
