/**
 * What one virtual server's upstream session holds in memory, in one process, no I/O: `--sessions` member sessions
 * (src/virtual-servers/member-session.ts) opened over an in-process exchange that answers like a member (initialize,
 * then a tools/call), each kept; and `--sessions` merged 10 × 50-tool listings' admissions (src/virtual-servers/merge.ts),
 * each kept. The JavaScript heap after a full collection, before and after, divided by the count. Steadier than the
 * service's RSS (bench/virtual.ts), which also holds what the collector has not given back yet.
 *
 *   bun bench/member-heap.ts [--sessions 2000]
 */
import { messageReadAlready } from "../src/http/read-already";
import { openMemberSession } from "../src/virtual-servers/member-session";
import { mergeLists } from "../src/virtual-servers/merge";
import { createRelay } from "../src/virtual-servers/relay";

const at = process.argv.indexOf("--sessions");
const COUNT = at >= 0 ? Number(process.argv[at + 1]) : 2000;
const heap = () => {
  Bun.gc(true);
  return process.memoryUsage().heapUsed;
};

let sessionIds = 0;
/** A member as the proxy relays it: JSON answers, a session id at initialize, 202 for notifications, no GET stream. */
async function exchange(_connectorId: string, request: Request): Promise<Response> {
  if (request.method === "GET") return new Response(null, { status: 405 });
  // A plain call carries its message in-process (src/http/read-already.ts); the SDK client's requests, a body.
  const message = (messageReadAlready(request)?.message ?? (await request.json())) as { id?: string | number; method: string };
  if (message.id === undefined) return new Response(null, { status: 202 });
  if (message.method === "initialize")
    return Response.json(
      {
        jsonrpc: "2.0",
        id: message.id,
        result: {
          protocolVersion: "2025-11-25",
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: "member", version: "1" },
        },
      },
      { headers: { "mcp-session-id": `session-${++sessionIds}` } },
    );
  return Response.json({ jsonrpc: "2.0", id: message.id, result: { content: [{ type: "text", text: "pong" }] } });
}

const peer = {
  capabilities: {},
  stream: () => undefined,
  relay: createRelay(),
  listChanged: () => undefined,
  resourceUpdated: () => undefined,
  logLevel: () => undefined,
  log: () => undefined,
};
const kept: unknown[] = [];
async function openOne(connectorId: string) {
  const session = openMemberSession(exchange, connectorId, peer, { remember: () => undefined });
  await session.request("tools/call", { name: "ping", arguments: {} }, { timeout: 5000 });
  return session;
}
for (let i = 0; i < 50; i++) await openOne("warm-up");

let before = heap();
for (let i = 0; i < COUNT; i++) kept.push(await openOne(`connector-${i}`));
await Bun.sleep(100);
const perSession = (heap() - before) / COUNT / 1024;

const listing = JSON.stringify(
  Array.from({ length: 50 }, (_, i) => ({ name: `tool_${i}`, description: "A tool", inputSchema: { type: "object" } })),
);
const lists = () =>
  Array.from({ length: 10 }, (_, m) => ({
    member: { connectorId: `connector-${m}`, prefix: `m${m}` },
    items: JSON.parse(listing) as Record<string, unknown>[],
  }));
const inputs = Array.from({ length: COUNT }, lists);
before = heap();
for (const input of inputs) kept.push(mergeLists("tools", input).admission);
const perAdmission = (heap() - before) / COUNT / 1024;

console.log(`${COUNT} member sessions opened and kept: ${perSession.toFixed(2)} KiB of heap each`);
console.log(`${COUNT} admissions of a 10 × 50-tool listing kept: ${perAdmission.toFixed(2)} KiB of heap each`);
