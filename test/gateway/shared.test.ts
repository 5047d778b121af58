import { afterAll, beforeAll, expect, test } from "bun:test";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SESSION_NOT_FOUND } from "../../src/gateway/json-rpc";
import { createSharedGateway } from "../../src/gateway/shared";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";
import { freePort, waitForHttp } from "../peers/ports";
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

// The Kubernetes pod's wiring, on loopback: the server runs `<command> < in > out` over two named pipes, and the
// gateway subcommand serves them (`--fifo`).
const dir = mkdtempSync(join(tmpdir(), "cs-fifo-"));
let server: Bun.Subprocess;
let gatewayProc: Bun.Subprocess;
let port: number;
beforeAll(async () => {
  server = Bun.spawn(["sh", "-c", `mkfifo "$0/in" "$0/out" && exec node "$1" stdio < "$0/in" > "$0/out"`, dir, EVERYTHING], {
    stdout: "ignore",
    stderr: "ignore",
  });
  port = await freePort();
  gatewayProc = Bun.spawn(
    [
      process.execPath,
      resolve(import.meta.dir, "../../src/index.ts"),
      "gateway",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--fifo",
      dir,
    ],
    {
      stdout: "ignore",
      stderr: "ignore",
    },
  );
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
});
afterAll(async () => {
  gatewayProc.kill("SIGTERM");
  server.kill("SIGTERM");
  await Promise.all([gatewayProc.exited, server.exited]);
  rmSync(dir, { recursive: true, force: true });
});

test("the sidecar over named pipes serves 2026-07-28 clients too, next to 2025 sessions (real sockets)", async () => {
  await waitFor("the gateway to be ready", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, 10_000);
  await expectBothEras(`http://127.0.0.1:${port}/mcp`, (request) => fetch(request));
});

test("the gateway over named pipes: ready once the server answered, sessions isolated; it exits when the server does", async () => {
  await waitFor("the gateway to be ready", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, 10_000);
  await expectIsolatedSessions(`http://127.0.0.1:${port}/mcp`);
  server.kill("SIGKILL");
  expect(await gatewayProc.exited).toBe(1);
});
