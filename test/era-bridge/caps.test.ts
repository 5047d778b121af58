import { randomBytes } from "node:crypto";
import { createSealer } from "../../src/secrets/sealer";
import { expect, test } from "bun:test";
import { createEraBridges } from "../../src/era-bridge/bridges";
import { messageReadAlready } from "../../src/http/read-already";
import { createLogger } from "../../src/observability/logger";
import type { Principal } from "../../src/users/model";
import { modernRequest } from "../support/modern";

// The era bridge's caps on their own, over an in-process hop that answers as a 2025 server with JSON (no real peer is
// needed for what is counted): one user's bridges never push out another user's.
const hop = async (_caller: Principal, _id: string, request: Request) => {
  if (request.method !== "POST") return new Response(null, { status: 405 });
  // The bridge's own requests carry their message in-process (http/read-already.ts); the SDK transport's, a body.
  const message = (messageReadAlready(request)?.message ?? (await request.json())) as { id?: number | string; method: string };
  if (message.id === undefined) return new Response(null, { status: 202 });
  const result =
    message.method === "initialize"
      ? { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "hop", version: "1" } }
      : { tools: [] };
  return Response.json({ jsonrpc: "2.0", id: message.id, result });
};
const person = (id: string): Principal => ({ id, username: id, role: "user", credential: `token:${id}` });
const list = (id: string) => modernRequest(`http://cs.test/api/v1/connectors/${id}/mcp`, { method: "tools/list" });

test("beyond its cap a user's longest idle bridge goes, never another user's", async () => {
  const log = createLogger({ level: "error", write: () => undefined });
  const bridges = createEraBridges({
    hop,
    kind: "connectors",
    log,
    clock: Date.now,
    inputTimeoutMs: 1000,
    maxPerUser: 2,
    sealer: createSealer(randomBytes(32)),
    holder: "this-process/connectors",
  });
  try {
    const bob = person("bob");
    expect((await bridges.serve(bob, "c-bob", list("c-bob"))).status).toBe(200);
    const alice = person("alice");
    for (const id of ["c1", "c2", "c3", "c4"]) {
      const answer = await (await bridges.serve(alice, id, list(id))).json();
      expect(answer.result).toMatchObject({ tools: [], resultType: "complete" });
    }
    // Alice keeps two (her cap), Bob keeps his.
    expect(bridges.size()).toBe(3);
    expect((await (await bridges.serve(bob, "c-bob", list("c-bob"))).json()).result.tools).toEqual([]);
    expect(bridges.size()).toBe(3);
  } finally {
    await bridges.closeAll();
  }
});
