import { afterAll, beforeAll, expect, test } from "bun:test";
import { resolve } from "node:path";
import { EVERYTHING } from "../peers/everything";
import { freePort, waitForHttp } from "../peers/ports";
import { SESSION_NOT_FOUND } from "../../src/gateway/json-rpc";
import { GATEWAY_TOKEN_HEADER } from "../../src/gateway/token";
import { expectIsolatedSessions, mcpClient, toolText as text } from "../support/mcp";
import { waitFor } from "../support/wait";

// The real subcommand, run from source as the binary runs it: `connector-service gateway -- <stdio server>`.
const ENTRY = resolve(import.meta.dir, "../../src/index.ts");
// The deployment's token the gateway wants on /mcp (as the drivers give it one).
const TOKEN = "gateway-token-for-tests";
const withToken = { [GATEWAY_TOKEN_HEADER]: TOKEN };
let proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
let url: string;
const lines: string[] = [];

beforeAll(async () => {
  const port = await freePort();
  proc = Bun.spawn(
    [process.execPath, ENTRY, "gateway", "--port", String(port), "--host", "127.0.0.1", "--", "node", EVERYTHING, "stdio"],
    {
      env: { ...process.env, GATEWAY__TOKEN: TOKEN },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  (async () => {
    const decoder = new TextDecoder();
    const reader = proc.stdout.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      lines.push(...decoder.decode(chunk.value).split("\n").filter(Boolean));
    }
  })();
  url = `http://127.0.0.1:${port}/mcp`;
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
});
afterAll(async () => {
  proc.kill("SIGTERM");
  expect(await proc.exited).toBe(0);
});

/** An MCP SDK client that sends the gateway's token, as the service does. */
const gatewayClient = () =>
  mcpClient(url, null, (request) => {
    const headers = new Headers(request.headers);
    for (const [k, v] of Object.entries(withToken)) headers.set(k, v);
    return fetch(new Request(request, { headers }));
  });

test("without the deployment's token /mcp is a 401; /healthz answers anyone", async () => {
  for (const headers of [{}, { [GATEWAY_TOKEN_HEADER]: "wrong" }] as Record<string, string>[]) {
    const res = await fetch(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    expect((await res.json()).error.message).toContain("serves its connector-service only");
  }
  expect((await fetch(url.replace("/mcp", "/healthz"))).status).toBe(200);
});

test("the MCP SDK client uses a stdio server through the gateway; the server's environment has no gateway token", async () => {
  const { client, close } = await gatewayClient();
  expect(client.getServerVersion()?.name).toContain("everything");
  expect((await client.listTools()).tools.map((t) => t.name)).toContain("echo");
  expect(text(await client.callTool({ name: "echo", arguments: { message: "via gateway" } }))).toBe("Echo: via gateway");
  const env = JSON.parse(text(await client.callTool({ name: "get-env", arguments: {} })));
  expect(env.GATEWAY__TOKEN).toBeUndefined();
  await close();
});

test("two concurrent sessions each get only their own results and progress", () => expectIsolatedSessions(url, withToken));

test("an unknown session is a 404 with the MCP SDK's session-not-found code", async () => {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      ...withToken,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": "nope",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(res.status).toBe(404);
  expect(await res.json()).toEqual({
    jsonrpc: "2.0",
    error: { code: SESSION_NOT_FOUND, message: "Session not found" },
    id: null,
  });
  expect(SESSION_NOT_FOUND).toBe(-32001);
});

test("a session ended by DELETE is a 404 at once for the next request naming it (the conformance kit's session lifecycle)", async () => {
  const headers = (session?: string) => ({
    ...withToken,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...(session && { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }),
  });
  const init = await fetch(url, {
    method: "POST",
    headers: headers(),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "lifecycle", version: "1" } },
    }),
  });
  const session = init.headers.get("mcp-session-id")!;
  await init.text();
  expect((await fetch(url, { method: "DELETE", headers: headers(session) })).status).toBe(200);
  // Right after the DELETE, while the session's process may still be exiting: answered, not left waiting.
  const after = await fetch(url, {
    method: "POST",
    headers: headers(session),
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    signal: AbortSignal.timeout(5_000),
  });
  expect(after.status).toBe(404);
  expect((await after.json()).error.code).toBe(SESSION_NOT_FOUND);
});

test("a session's server process writes its stderr to the log, tagged with the gateway and its pid", async () => {
  const { close } = await gatewayClient();
  await close();
  const stderr = await waitFor("a stderr line", () => {
    const found = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "stdio server stderr");
    return found.length > 0 && found;
  });
  expect(stderr[0]).toMatchObject({ component: "gateway" });
  expect(stderr[0].pid).toBeNumber();
});
