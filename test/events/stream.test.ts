import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EVENT_RETENTION_MS } from "../../src/events/stream";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { sseReader } from "../support/sse";

// The connector events stream, through app.handle: each change once, in order, only to whom it belongs (and to
// administrators); resumed with Last-Event-ID; told to reset when what it missed is no longer kept.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
  alice = await t.user("alice");
  bob = await t.user("bob");
});
afterAll(() => t.close());

const open = async (token: string, lastEventId?: string) => {
  const response = await t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/events`, {
      headers: { authorization: `Bearer ${token}`, ...(lastEventId && { "last-event-id": lastEventId }) },
    }),
  );
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  return sseReader(response);
};

/** The next `n` events of a stream, as type and state. */
async function take(stream: ReturnType<typeof sseReader>, n: number) {
  const out: { id: number; type: string; connector: string; state: string; reason: string | null }[] = [];
  for (let i = 0; i < n; i++) {
    const e = await stream.nextEvent();
    const data = JSON.parse(e.data);
    out.push({ id: Number(e.id), type: e.event!, connector: data.id, state: data.state, reason: data.disconnect_reason });
  }
  return out;
}

describe("the events stream", () => {
  test("shows each change of one's connectors once and in order; another user sees none of them, an administrator all", async () => {
    const [mine, bobs, admins] = await Promise.all([open(alice.token), open(bob.token), open(t.admin.token)]);
    const created = await alice.api("POST", "/api/v1/connectors", {
      body: { url: "https://mcp.example/mcp", metadata: { name: "Example" } },
    });
    const id = created.body.id;
    expect((await alice.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} })).body.state).toBe("connected");
    await alice.api("POST", `/api/v1/connectors/${id}/disconnect`);
    expect((await alice.api("DELETE", `/api/v1/connectors/${id}`)).status).toBe(204);

    const seen = await take(mine, 4);
    expect(seen.map(({ type, state }) => [type, state])).toEqual([
      ["connector.created", "created"],
      ["connector.updated", "connected"],
      ["connector.updated", "disconnected"],
      ["connector.deleted", "disconnected"],
    ]);
    expect(seen.every((e) => e.connector === id)).toBe(true);
    expect(seen[2]!.reason).toBeString();
    expect(seen.map((e) => e.id)).toEqual([...seen.map((e) => e.id)].sort((a, b) => a - b));
    expect((await take(admins, 4)).map((e) => e.id)).toEqual(seen.map((e) => e.id));

    // Bob's stream: his own change arrives, none of Alice's came before it.
    const his = await bob.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/bob" } });
    const bobSaw = await take(bobs, 1);
    expect(bobSaw).toMatchObject([{ type: "connector.created", connector: his.body.id }]);
    await Promise.all([mine.close(), bobs.close(), admins.close()]);
  });

  test("resumes after Last-Event-ID with what was missed, in order, then goes on live", async () => {
    const first = await open(alice.token);
    const a = (await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/a" } })).body.id;
    const [seen] = await take(first, 1);
    await first.close();

    // While no stream is open: two changes.
    const b = (await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/b" } })).body.id;
    await alice.api("POST", `/api/v1/connectors/${a}/connect`, { body: {} });

    const resumed = await open(alice.token, String(seen!.id));
    const missed = await take(resumed, 2);
    expect(missed.map((e) => [e.type, e.connector])).toEqual([
      ["connector.created", b],
      ["connector.updated", a],
    ]);
    await alice.api("DELETE", `/api/v1/connectors/${b}`);
    expect(await take(resumed, 1)).toMatchObject([{ type: "connector.deleted", connector: b }]);
    await resumed.close();
  });

  test("an id older than what is kept gets a reset event, then live events", async () => {
    const first = await open(alice.token);
    await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/old" } });
    const [old] = await take(first, 1);
    await first.close();
    await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/older" } });
    t.clock.advance(EVENT_RETENTION_MS + 60_000);
    await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/new" } });
    await t.runJobs();

    const resumed = await open(alice.token, String(old!.id));
    const reset = await resumed.nextEvent();
    expect(reset.event).toBe("reset");
    expect(JSON.parse(reset.data).reason).toContain("reload");
    const live = (await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/after" } })).body.id;
    expect(await take(resumed, 1)).toMatchObject([{ type: "connector.created", connector: live }]);
    await resumed.close();
  });

  test("needs credentials; a client closing the stream frees its place", async () => {
    const anonymous = await t.handle(new Request(`${t.publicUrl}/api/v1/connectors/events`));
    expect(anonymous.status).toBe(401);
    const streams = await Promise.all(Array.from({ length: 20 }, () => open(bob.token)));
    const refused = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/events`, { headers: { authorization: `Bearer ${bob.token}` } }),
    );
    expect(refused.status).toBe(429);
    await streams.pop()!.close();
    const again = await open(bob.token);
    await Promise.all([...streams, again].map((s) => s.close()));
  });
});
