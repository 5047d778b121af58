import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CRASH_LOOP_STARTS, createGateway, type SessionGateway } from "../../src/gateway/gateway";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";

// The session gateway's health, as the local driver reports it: a server that exits before answering at every new
// session is not ready; one that answers, even once, is.

const dir = mkdtempSync(join(tmpdir(), "cs-gw-health-"));
const broken = join(dir, "broken");
const gateways: SessionGateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
  rmSync(broken, { force: true });
});

function gateway(): SessionGateway {
  const script = `test -e ${broken} && { echo 'fatal: no config' >&2; exit 3; }; exec node ${EVERYTHING} stdio`;
  const created = createGateway({
    stdio: { command: "sh", args: ["-c", script], env: getDefaultEnvironment() },
    log: createLogger({ level: "error" }),
  });
  gateways.push(created);
  return created;
}

const initialize = (g: SessionGateway) =>
  g
    .fetch(
      new Request("http://gateway/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      }),
    )
    .then((r) => r.text());

test(`a server that exits before answering in ${CRASH_LOOP_STARTS} new sessions in a row makes the gateway not ready, with its last words`, async () => {
  const g = gateway();
  writeFileSync(broken, "");
  for (let i = 1; i <= CRASH_LOOP_STARTS; i++) {
    expect(await initialize(g)).toContain("fatal: no config");
    expect(g.health().ready).toBe(i < CRASH_LOOP_STARTS);
  }
  expect(g.health()).toEqual({ ready: false, reason: expect.stringContaining("The stdio server exited: fatal: no config") });
});

test("one session that answers makes it ready again", async () => {
  const g = gateway();
  writeFileSync(broken, "");
  for (let i = 0; i < CRASH_LOOP_STARTS; i++) await initialize(g);
  expect(g.health().ready).toBe(false);
  rmSync(broken);
  expect(await initialize(g)).toContain('"serverInfo"');
  expect(g.health()).toEqual({ ready: true });
});
