import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { startAskingServer } from "../peers/asking-server";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { MODERN, modernRequest } from "../support/modern";
import { openTestStore, TEST_STORE } from "../support/store";
import { waitFor } from "../support/wait";
import { createHandoffStore } from "../../src/era-bridge/handoff-store";

// Parked calls (a 2025 server asks a 2026-07-28 client during a bridged call) and their requestState, through
// `app.handle` of two instances of the service on one store, as two replicas: on PostgreSQL a retry that reaches the
// instance not holding its call is handed over to the one that does (era-bridge/handoffs.ts); on SQLite (one process)
// a state naming another process names nothing. The end-to-end form, replicas of the binary behind nginx, is
// replicas.test.ts.
const SHARED = TEST_STORE === "postgres";
const CAPABILITIES = { elicitation: { form: {} }, sampling: {} };
const peer = await startAskingServer();
let a: TestApp;
let b: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let url: string;
let otherUrl: string;
const key = randomBytes(32);

beforeAll(async () => {
  const store = await openTestStore();
  const clock = steppedClock();
  a = await createTestApp({ store, sealingKey: key, clock, realNetwork: true });
  b = await createTestApp({ store, sealingKey: key, clock, realNetwork: true, adminUsername: "admin-b" });
  alice = await a.user("alice");
  url = `${a.publicUrl}/api/v1/connectors/${await connectedConnector(alice.api, peer.url)}/mcp`;
  otherUrl = `${a.publicUrl}/api/v1/connectors/${await connectedConnector(alice.api, peer.url)}/mcp`;
}, 30_000);
afterAll(async () => {
  await Promise.all([a.services.proxy.closeBridges(), b.services.proxy.closeBridges()]);
  await a.close(); // the store both share
  peer.stop();
});

type Answer = { id: unknown; result?: Record<string, any>; error?: { code: number; message: string } };

/** A 2026-07-28 tools/call (a retry when `params` has its requestState) sent to `app` as `authorization`. */
async function call(
  app: TestApp,
  params: Record<string, unknown>,
  options: { to?: string; authorization?: string; id?: number; signal?: AbortSignal } = {},
): Promise<{ status: number; answer: Answer }> {
  const request = modernRequest(
    options.to ?? url,
    { id: options.id ?? 1, method: "tools/call", params },
    { authorization: options.authorization ?? `Bearer ${alice.token}` },
    MODERN,
    CAPABILITIES,
  );
  const response = await app.handle(options.signal ? new Request(request, { signal: options.signal }) : request);
  return { status: response.status, answer: (await response.json()) as Answer };
}

/** A call of `tool` started on `app`: its input_required, the first input's key and the requestState. */
async function parked(app: TestApp, tool = "ask", to = url) {
  const { answer } = await call(app, { name: tool, arguments: {} }, { to });
  expect(answer.result).toMatchObject({ resultType: "input_required" });
  return { key: Object.keys(answer.result!.inputRequests)[0]!, state: answer.result!.requestState as string };
}
const colour = { action: "accept", content: { colour: "blue" } };
const sample = { role: "assistant", content: { type: "text", text: "sampled" }, model: "m" };
const retry = (state: string, responses: Record<string, unknown>) => ({
  name: "ask",
  arguments: {},
  requestState: state,
  inputResponses: responses,
});

describe("the requestState", () => {
  test("is sealed by the service for the caller's bridge: a forged, garbled or borrowed one is -32602, never a 5xx", async () => {
    const { key, state } = await parked(a);
    const elsewhere = await parked(a, "ask", otherUrl);
    const flipped = `${state.slice(0, 12)}${state[12] === "A" ? "B" : "A"}${state.slice(13)}`;
    const forged = [
      "",
      "no-such-state",
      `v1:${randomBytes(48).toString("base64")}`,
      flipped,
      state.slice(0, -4),
      `${state}x`,
      // Sealed by the service, for this user's call on another connector: not this bridge's.
      elsewhere.state,
    ];
    for (const bad of forged) {
      const { status, answer } = await call(a, retry(bad, { [key]: colour }), { id: 7 });
      expect(status).toBe(200);
      expect(answer).toMatchObject({ id: 7, error: { code: -32602 } });
    }
    // None of them used the state up: the right retry goes on (the next question), and the one after completes.
    const next = (await call(a, retry(state, { [key]: colour }), { id: 2 })).answer;
    expect(next.result).toMatchObject({ resultType: "input_required" });
    const done = (await call(a, retry(next.result!.requestState, { [Object.keys(next.result!.inputRequests)[0]!]: sample })))
      .answer;
    expect(done.result?.content?.[0]?.text).toBe("accept blue; sampled");
  });

  test("the same user by another credential finds nothing (-32602); another user is refused at the door (404)", async () => {
    const { key, state } = await parked(a);
    const basic = `Basic ${btoa(`${alice.basic.username}:${alice.basic.password}`)}`;
    const byBasic = await call(a, retry(state, { [key]: colour }), { authorization: basic });
    expect(byBasic.answer.error).toMatchObject({ code: -32602 });
    const bob = await a.user(`bob-${crypto.randomUUID().slice(0, 8)}`);
    for (const app of [a, b]) {
      const response = await app.handle(
        modernRequest(
          url,
          { method: "tools/call", params: retry(state, { [key]: colour }) },
          {
            authorization: `Bearer ${bob.token}`,
          },
        ),
      );
      expect(response.status).toBe(404);
    }
    expect((await call(a, retry(state, { [key]: colour }))).answer.result).toMatchObject({ resultType: "input_required" });
  });
});

describe("a retry that reaches the other instance", () => {
  test(
    SHARED
      ? "is handed to the instance holding the call: the same upstream call goes on, each round's answer comes back"
      : "on SQLite (one process) names no call: -32602 at once, and the call still waits where it is",
    async () => {
      const calls = peer.seen.calls;
      const { key, state } = await parked(a);
      const started = performance.now();
      const first = await call(b, retry(state, { [key]: colour }), { id: 2 });
      expect(first.status).toBe(200);
      if (!SHARED) {
        expect(first.answer).toMatchObject({ id: 2, error: { code: -32602 } });
        expect(performance.now() - started).toBeLessThan(1000);
        expect((await call(a, retry(state, { [key]: colour }))).answer.result).toMatchObject({ resultType: "input_required" });
        return;
      }
      // The next question, asked by the same call on a: its state names a again, and b hands it over again.
      expect(first.answer).toMatchObject({ id: 2, result: { resultType: "input_required" } });
      const next = first.answer.result!;
      const done = await call(b, retry(next.requestState, { [Object.keys(next.inputRequests)[0]!]: sample }), { id: 3 });
      expect(done.answer).toMatchObject({ id: 3, result: { resultType: "complete" } });
      expect(done.answer.result?.content?.[0]?.text).toBe("accept blue; sampled");
      expect(peer.seen.calls).toBe(calls + 1);
      // Used: the state is good for one retry, on either instance.
      for (const app of [b, a])
        expect((await call(app, retry(state, { [key]: colour }))).answer.error).toMatchObject({ code: -32602 });
    },
    30_000,
  );

  test.if(SHARED)("whose client goes away cancels the call upstream, as a local retry's does", async () => {
    const { cancelled, working } = peer.seen;
    const { key, state } = await parked(a, "ask-then-wait");
    const gone = new AbortController();
    const waiting = call(b, { ...retry(state, { [key]: colour }), name: "ask-then-wait" }, { signal: gone.signal }).catch(
      () => undefined,
    );
    // The answer reached the server through a (its call works on), then the client gives up on b.
    await waitFor("the server to work on", () => peer.seen.working > working);
    gone.abort();
    await waiting;
    await waitFor("the call to be cancelled upstream", () => peer.seen.cancelled > cancelled);
  });

  test.if(SHARED)(
    "whose call is no longer held anywhere (the holder's bridges closed) is -32602 once no one takes it",
    async () => {
      const c = await createTestApp({
        store: a.deps.store,
        sealingKey: key,
        clock: a.clock,
        realNetwork: true,
        adminUsername: "admin-c",
      });
      const { key: input, state } = await parked(c);
      await c.services.proxy.closeBridges();
      const started = performance.now();
      expect((await call(b, retry(state, { [input]: colour }), { id: 4 })).answer).toMatchObject({
        id: 4,
        error: { code: -32602 },
      });
      expect(performance.now() - started).toBeLessThan(10_000);
    },
    20_000,
  );
});

test.if(SHARED)(
  "a handed-over retry waits at most PROXY__INPUT_TIMEOUT_SECONDS for its answer, then the call is cancelled upstream",
  async () => {
    const store = await openTestStore();
    const env = { PROXY__INPUT_TIMEOUT_SECONDS: "1" };
    const holder = await createTestApp({ store, sealingKey: key, realNetwork: true, env });
    const other = await createTestApp({ store, sealingKey: key, realNetwork: true, env, adminUsername: "admin-other" });
    try {
      const bob = await holder.user("bob");
      const to = `${holder.publicUrl}/api/v1/connectors/${await connectedConnector(bob.api, peer.url)}/mcp`;
      const authorization = `Bearer ${bob.token}`;
      const { cancelled, working } = peer.seen;
      const first = (await call(holder, { name: "ask-then-wait", arguments: {} }, { to, authorization })).answer.result!;
      const responses = { [Object.keys(first.inputRequests)[0]!]: colour };
      const { answer } = await call(
        other,
        { name: "ask-then-wait", arguments: {}, requestState: first.requestState, inputResponses: responses },
        { to, authorization, id: 5 },
      );
      expect(answer).toMatchObject({ id: 5, error: { code: -32603 } });
      expect(answer.error!.message).toContain("did not answer within 1 s");
      // The answer had reached the server (the holder took the retry): the cancel is the handoff's, not the park's.
      expect(peer.seen.working).toBeGreaterThan(working);
      await waitFor("the call to be cancelled upstream", () => peer.seen.cancelled > cancelled);
    } finally {
      await Promise.all([holder.services.proxy.closeBridges(), other.services.proxy.closeBridges()]);
      await holder.close();
    }
  },
  20_000,
);

test(
  SHARED
    ? "a virtual server's parked call (a member asked) retried on the other instance is handed over too"
    : "a virtual server's parked call retried on the other instance names no call on SQLite",
  async () => {
    const connectorId = await connectedConnector(alice.api, peer.url);
    const created = await alice.api("POST", "/api/v1/virtual-servers", {
      body: { name: `Asking ${crypto.randomUUID().slice(0, 8)}`, members: [{ connector_id: connectorId, prefix: "m" }] },
    });
    const to = created.body.mcp_url as string;
    const first = (await call(a, { name: "m__ask", arguments: {} }, { to })).answer.result!;
    expect(first).toMatchObject({ resultType: "input_required" });
    const params = { name: "m__ask", arguments: {}, requestState: first.requestState };
    const responses = { [Object.keys(first.inputRequests)[0]!]: colour };
    const next = (await call(b, { ...params, inputResponses: responses }, { to, id: 2 })).answer;
    if (!SHARED) return void expect(next).toMatchObject({ id: 2, error: { code: -32602 } });
    expect(next).toMatchObject({ id: 2, result: { resultType: "input_required" } });
    const sampled = { [Object.keys(next.result!.inputRequests)[0]!]: sample };
    const done = await call(b, { ...params, requestState: next.result!.requestState, inputResponses: sampled }, { to, id: 3 });
    expect(done.answer.result?.content?.[0]?.text).toBe("accept blue; sampled");
  },
  30_000,
);

test.if(SHARED)(
  "rows a replica left behind (it died waiting) are swept once older than the longest wait and a minute",
  async () => {
    const rows = createHandoffStore(a.deps.store, a.deps.sealer);
    const now = a.clock.now();
    const [old, recent] = [`left-${crypto.randomUUID()}`, `recent-${crypto.randomUUID()}`];
    await rows.insert(old, "gone/connectors", "[]", "{}", now - a.config.proxy.inputTimeoutMs - 61_000);
    await rows.insert(recent, "gone/connectors", "[]", "{}", now - a.config.proxy.inputTimeoutMs);
    await a.runJobs();
    expect(await rows.read(old)).toBeUndefined();
    expect(await rows.read(recent)).toEqual({ taken: false });
    await rows.delete([recent]);
  },
);
