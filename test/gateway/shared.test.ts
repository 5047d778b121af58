import { afterAll, beforeAll, expect, test } from "bun:test";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createSharedGateway } from "../../src/gateway/shared";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";
import { freePort, waitForHttp } from "../peers/ports";
import { mcpClient } from "../support/mcp";

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

/** Two sessions whose SDK clients use the same request ids (0, 1, …) and the same progress tokens. */
async function concurrentSessions(url: string) {
  const [a, b] = await Promise.all([mcpClient(url, null), mcpClient(url, null)]);
  const progress = { a: 0, b: 0 };
  const [ra, rb, sa, sb] = await Promise.all([
    a.client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 0.6, steps: 3 } }, undefined, { onprogress: () => void progress.a++ }),
    b.client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 0.4, steps: 2 } }, undefined, { onprogress: () => void progress.b++ }),
    a.client.callTool({ name: "get-sum", arguments: { a: 1, b: 1 } }),
    b.client.callTool({ name: "get-sum", arguments: { a: 500, b: 500 } }),
  ]);
  expect(text(ra)).toContain("Steps: 3");
  expect(text(rb)).toContain("Steps: 2");
  expect(text(sa)).toContain("2");
  expect(text(sb)).toContain("1000");
  expect(progress).toEqual({ a: 3, b: 2 });
  await a.close();
  await b.close();
}

test("one shared server process: ids and progress tokens are rewritten, so concurrent sessions do not interfere", async () => {
  const log = createLogger({ level: "error", write: () => {} });
  const server = new StdioClientTransport({ command: "node", args: [EVERYTHING, "stdio"], stderr: "ignore" });
  const gateway = createSharedGateway({ server, log });
  await gateway.ready();
  const http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: gateway.fetch });
  const url = `http://127.0.0.1:${http.port}/mcp`;
  const { client, close } = await mcpClient(url, null);
  expect(client.getServerVersion()?.name).toContain("everything");
  await close();
  await concurrentSessions(url);
  expect((await fetch(`http://127.0.0.1:${http.port}/healthz`)).status).toBe(200);
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
  server = Bun.spawn(["sh", "-c", `mkfifo "$0/in" "$0/out" && exec node "$1" stdio < "$0/in" > "$0/out"`, dir, EVERYTHING], { stdout: "ignore", stderr: "ignore" });
  port = await freePort();
  gatewayProc = Bun.spawn([process.execPath, resolve(import.meta.dir, "../../src/index.ts"), "gateway", "--port", String(port), "--host", "127.0.0.1", "--fifo", dir], {
    stdout: "ignore",
    stderr: "ignore",
  });
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
});
afterAll(async () => {
  gatewayProc.kill("SIGTERM");
  server.kill("SIGTERM");
  await Promise.all([gatewayProc.exited, server.exited]);
  rmSync(dir, { recursive: true, force: true });
});

test("the gateway over named pipes: ready once the server answered, sessions isolated; it exits when the server does", async () => {
  const until = Date.now() + 10_000;
  while ((await fetch(`http://127.0.0.1:${port}/healthz`)).status !== 200 && Date.now() < until) await Bun.sleep(100);
  expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  await concurrentSessions(`http://127.0.0.1:${port}/mcp`);
  server.kill("SIGKILL");
  expect(await gatewayProc.exited).toBe(1);
});
