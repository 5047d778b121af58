import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { startAskingServer } from "../peers/asking-server";
import { ADMIN, apiClient, createUser } from "../support/service";
import { MODERN, modernRequest } from "../support/modern";
import { startCluster, type Cluster } from "../support/replicas";
import { waitFor } from "../support/wait";

// Parked calls across replicas: two replicas of the compiled binary on one PostgreSQL database (behind nginx, which
// these tests bypass: each request goes to the replica it names, so which one holds the call is known). A 2025-only
// server asks during a 2026-07-28 client's call; the call is parked on replica A, its retries reach replica B, which
// hands them to A through the store (era-bridge/handoffs.ts).
const CAPABILITIES = { elicitation: { form: {} }, sampling: {} };
const peer = await startAskingServer();
let cluster: Cluster;
let A: string;
let B: string;
let url: (replica: string) => string;
let adminToken: string;
let other: { token: string };

beforeAll(async () => {
  cluster = await startCluster(2);
  [A, B] = cluster.replicas.map((r) => r.url) as [string, string];
  const created = await cluster.api("POST", "/api/v1/connectors", { body: { url: peer.url } });
  const id = created.body.id as string;
  expect((await cluster.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} })).body.state).toBe("connected");
  url = (replica) => `${replica}/api/v1/connectors/${id}/mcp`;
  adminToken = (await cluster.api("POST", "/api/v1/tokens", { body: { name: "parked" } })).body.token as string;
  const someone = await createUser(cluster.api, "someone-else");
  other = { token: (await apiClient(cluster.url, someone)("POST", "/api/v1/tokens", { body: { name: "t" } })).body.token };
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  peer.stop();
});

type Answer = { id: unknown; result?: Record<string, any>; error?: { code: number; message: string } };
const colour = { action: "accept", content: { colour: "blue" } };
const sample = { role: "assistant", content: { type: "text", text: "sampled" }, model: "m" };

/** A 2026-07-28 tools/call of `tool` sent to `replica` (a retry with `state` and `responses`). */
async function call(
  replica: string,
  tool: string,
  options: {
    state?: string;
    responses?: Record<string, unknown>;
    id?: number;
    authorization?: string;
    signal?: AbortSignal;
  } = {},
): Promise<{ status: number; answer: Answer }> {
  const params = {
    name: tool,
    arguments: {},
    ...(options.state !== undefined && { requestState: options.state, inputResponses: options.responses ?? {} }),
  };
  const request = modernRequest(
    url(replica),
    { id: options.id ?? 1, method: "tools/call", params },
    { authorization: options.authorization ?? `Bearer ${adminToken}` },
    MODERN,
    CAPABILITIES,
  );
  const response = await fetch(request, { signal: options.signal });
  const text = await response.text();
  return { status: response.status, answer: (text ? JSON.parse(text) : {}) as Answer };
}

/** A call of `tool` parked on replica A: its first input's key and its requestState. */
async function parkedOnA(tool: string) {
  const { answer } = await call(A, tool);
  expect(answer.result).toMatchObject({ resultType: "input_required" });
  return { key: Object.keys(answer.result!.inputRequests)[0]!, state: answer.result!.requestState as string };
}

test("a call parked on A and retried on B goes on in the same upstream call; each round's answer comes back through B", async () => {
  const calls = peer.seen.calls;
  const { key, state } = await parkedOnA("ask");
  const next = await call(B, "ask", { state, responses: { [key]: colour }, id: 2 });
  expect(next.answer).toMatchObject({ id: 2, result: { resultType: "input_required" } });
  const asked = next.answer.result!;
  expect(Object.values(asked.inputRequests)[0]).toMatchObject({ method: "sampling/createMessage" });
  const done = await call(B, "ask", {
    state: asked.requestState,
    responses: { [Object.keys(asked.inputRequests)[0]!]: sample },
    id: 3,
  });
  expect(done.answer).toMatchObject({ id: 3, result: { resultType: "complete" } });
  expect(done.answer.result!.content[0].text).toBe("accept blue; sampled");
  expect(peer.seen.calls).toBe(calls + 1);
  // Good for one retry: replayed on either replica, it names nothing.
  for (const replica of [B, A]) {
    const again = await call(replica, "ask", { state, responses: { [key]: colour } });
    expect(again.answer.error).toMatchObject({ code: -32602 });
  }
}, 60_000);

test("on B: another user's retry is refused at the door, another credential and a forged state find nothing, no 5xx", async () => {
  const { key, state } = await parkedOnA("ask");
  const responses = { [key]: colour };
  expect((await call(B, "ask", { state, responses, authorization: `Bearer ${other.token}` })).status).toBe(404);
  const basic = `Basic ${btoa(`${ADMIN.username}:${ADMIN.password}`)}`;
  const byBasic = await call(B, "ask", { state, responses, authorization: basic });
  expect(byBasic).toMatchObject({ status: 200, answer: { error: { code: -32602 } } });
  const flipped = `${state.slice(0, 20)}${state[20] === "A" ? "B" : "A"}${state.slice(21)}`;
  for (const forged of [flipped, `v1:${randomBytes(60).toString("base64")}`, "garbage", `${state}x`]) {
    const { status, answer } = await call(B, "ask", { state: forged, responses, id: 9 });
    expect(status).toBe(200);
    expect(answer).toMatchObject({ id: 9, error: { code: -32602 } });
  }
  // None of it reached the call: its own retry, on B, goes on.
  expect((await call(B, "ask", { state, responses })).answer.result).toMatchObject({ resultType: "input_required" });
}, 60_000);

test("a retry on B whose client goes away cancels the call on A upstream", async () => {
  const { cancelled, working } = peer.seen;
  const { key, state } = await parkedOnA("ask-then-wait");
  const gone = new AbortController();
  const retried = call(B, "ask-then-wait", { state, responses: { [key]: colour }, signal: gone.signal }).catch(() => undefined);
  await waitFor("the server to work on with the answer", () => peer.seen.working > working);
  gone.abort();
  await retried;
  await waitFor("the call to be cancelled upstream", () => peer.seen.cancelled > cancelled);
}, 60_000);
