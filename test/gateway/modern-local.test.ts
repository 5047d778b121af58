import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGateway } from "../../src/gateway/gateway";
import { createLogger } from "../../src/observability/logger";
import { EVERYTHING } from "../peers/everything";
import { toolText } from "../support/mcp";
import { cancelMidway, expectBothEras, modernClient, modernRequest } from "../support/modern";
import { waitFor } from "../support/wait";

// The local runtime's gateway (one process per 2025 session) in front of server-everything: 2026-07-28 clients share
// one more process of their own. Each process's stdin is copied to a file (tee), to see what the server was sent.
const dir = mkdtempSync(join(tmpdir(), "cs-modern-"));
const sent = join(dir, "stdin.jsonl");
writeFileSync(sent, "");
const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
const stdio = { command: "sh", args: ["-c", 'tee -a "$0" | exec node "$1" stdio', sent, EVERYTHING], env };
const toServer = () =>
  readFileSync(sent, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { id?: unknown; method?: string; params?: Record<string, unknown> });
const URL_ = "http://localhost/mcp";
let places = 0;
const admit = () => {
  places++;
  let given = false;
  return () => void (!given && ((given = true), places--));
};
const logs: { msg: string; pid?: number; why?: string }[] = [];
const log = createLogger({ level: "info", write: (line) => void logs.push(JSON.parse(line)) });
const gateway = createGateway({ stdio, log, admit, idleSessionMs: 1_500 });
afterAll(async () => {
  await gateway.close();
  rmSync(dir, { recursive: true, force: true });
});

test("2026-07-28 clients share one process (counted by admit), 2025 sessions keep their own; list, call, progress, colliding ids", async () => {
  await expectBothEras(URL_, gateway.fetch);
  // One initialize for the modern process, one for the v1 client's session; nothing carried the envelope on.
  expect(toServer().filter((m) => m.method === "initialize")).toHaveLength(2);
  expect(JSON.stringify(toServer())).not.toContain("io.modelcontextprotocol/clientInfo");
  // Two places: the v1 client's session (it left without a DELETE) and the process of the 2026-07-28 clients.
  expect(gateway.sessionCount()).toBe(1);
  expect(places).toBe(2);
});

test("header errors and server/discover need no process of their own", async () => {
  const mismatch = await gateway.fetch(
    modernRequest(URL_, { method: "tools/call", params: { name: "echo", arguments: {} } }, { "mcp-name": "get-sum" }),
  );
  expect(mismatch.status).toBe(400);
  expect((await mismatch.json()).error.code).toBe(-32020);
  const unknown = await gateway.fetch(modernRequest(URL_, { method: "tools/list" }, {}, "2030-01-01"));
  expect((await unknown.json()).error.code).toBe(-32022);
  const discover = await (await gateway.fetch(modernRequest(URL_, { method: "server/discover" }))).json();
  expect(discover.result.supportedVersions).toEqual(["2026-07-28"]);
});

test("a cancelled call reaches the process as notifications/cancelled; idle, the process ends and gives its place back; the next request starts and initializes a new one", async () => {
  await cancelMidway(URL_, gateway.fetch, toServer);

  await waitFor("the idle process to end", () => places === 0, 10_000);
  const initializes = toServer().filter((m) => m.method === "initialize").length;
  const again = await modernClient(URL_, gateway.fetch);
  expect(toolText(await again.client.callTool({ name: "echo", arguments: { message: "again" } }))).toBe("Echo: again");
  expect(toServer().filter((m) => m.method === "initialize").length).toBe(initializes + 1);
  expect(places).toBe(1);
  await again.close();
});

test("when the process of the 2026-07-28 clients exits, its place is given back and the next request starts and initializes a new one", async () => {
  const first = await modernClient(URL_, gateway.fetch);
  const started = logs.findLast((l) => l.msg === "started the stdio server shared by 2026-07-28 clients")!;
  const initializes = toServer().filter((m) => m.method === "initialize").length;
  // The process (sh) and what it runs (tee, node): ended by their ids.
  const children = Bun.spawnSync(["pgrep", "-P", String(started.pid)])
    .stdout.toString()
    .split("\n")
    .filter(Boolean);
  for (const pid of [...children.map(Number), started.pid!]) process.kill(pid, "SIGKILL");
  await waitFor("its end", () => logs.some((l) => l.why === "its process exited"));
  expect(places).toBe(0);
  expect(toolText(await first.client.callTool({ name: "echo", arguments: { message: "after" } }))).toBe("Echo: after");
  expect(toServer().filter((m) => m.method === "initialize").length).toBe(initializes + 1);
  expect(places).toBe(1);
  await first.close();
});

test("a gateway closed while the process of the 2026-07-28 clients starts ends that process too", async () => {
  let held = 0;
  const own = createGateway({
    stdio,
    log,
    admit: () => (held++, () => void held--),
  });
  const answer = own.fetch(modernRequest(URL_, { method: "tools/list" }));
  await waitFor("its process to be admitted", () => held === 1);
  await own.close();
  expect((await answer).status).toBe(503);
  await waitFor("its place back", () => held === 0);
});

test("an open subscriptions/listen stream keeps the process of the 2026-07-28 clients from its idle end", async () => {
  let held = 0;
  const own = createGateway({ stdio, log, idleSessionMs: 300, admit: () => (held++, () => void held--) });
  const res = await own.fetch(
    modernRequest(URL_, { method: "subscriptions/listen", params: { notifications: { toolsListChanged: true } } }),
  );
  const reader = res.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toContain("notifications/subscriptions/acknowledged");
  await Bun.sleep(1_000); // more than three idle periods
  expect(held).toBe(1);
  await reader.cancel();
  await waitFor("the idle end once the stream closed", () => held === 0, 5_000);
  await own.close();
});
