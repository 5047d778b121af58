import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { sseReader } from "../support/sse";
import { waitFor } from "../support/wait";

// Long-lived streams keep the identity they were opened with only while it holds (src/users/access-watch.ts): a
// demoted and disabled administrator kept getting every user's connector events. Tests call the watch's sweep (what
// its one-second timer does); one test waits for the timer itself.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.user("alice");
});
afterAll(() => t.close());

/** The connector events as `headers` open them; the stream's reader. */
async function events(headers: Record<string, string>) {
  const res = await t.handle(new Request(`${t.publicUrl}/api/v1/connectors/events`, { headers }));
  expect(res.status).toBe(200);
  const reader = sseReader(res, 3_000);
  expect((await reader.next()).comment).toBe("connected");
  return reader;
}

/** Reads until the stream ends; what it delivered before that. */
async function untilEnd(reader: ReturnType<typeof sseReader>): Promise<string[]> {
  const seen: string[] = [];
  for (;;) {
    try {
      const event = await reader.next();
      if (event.event) seen.push(event.event);
    } catch (e) {
      if ((e as Error).message.startsWith("the stream ended")) return seen;
      throw e;
    }
  }
}

const created = async () =>
  (await alice.api("POST", "/api/v1/connectors", { body: { url: `https://mcp.example/${crypto.randomUUID()}` } })).body
    .id as string;

describe("the connector events stream", () => {
  test("an administrator demoted (and disabled) stops getting everyone's events: the stream ends at the next check", async () => {
    const carol = await t.user("carol", "admin");
    const stream = await events({ authorization: `Bearer ${carol.token}` });
    await created();
    expect((await stream.nextEvent()).event).toBe("connector.created"); // alice's, seen by an administrator
    expect((await t.api("PATCH", `/api/v1/users/${carol.principal.id}`, { body: { role: "user" } })).status).toBe(200);
    expect(await t.services.accessWatch.sweep()).toBe(1);
    await created();
    expect(await untilEnd(stream)).toEqual([]);
    // Reconnecting, carol is a user now: only her own connectors' events.
    const again = await events({ authorization: `Bearer ${carol.token}` });
    await created();
    await carol.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/carols" } });
    const next = await again.nextEvent();
    expect(JSON.parse(next.data).owner_id).toBe(carol.principal.id);
    await again.close();
    expect((await t.api("PATCH", `/api/v1/users/${carol.principal.id}`, { body: { disabled: true } })).status).toBe(200);
    expect(
      (
        await t.handle(
          new Request(`${t.publicUrl}/api/v1/connectors/events`, { headers: { authorization: `Bearer ${carol.token}` } }),
        )
      ).status,
    ).toBe(401);
  });

  test("a revoked API token, a disabled user, an ended console session: each one's stream ends; the others go on", async () => {
    const dave = await t.user("dave");
    const erin = await t.user("erin");
    const tokens = await dave.api("GET", "/api/v1/tokens");
    const byToken = await events({ authorization: `Bearer ${dave.token}` });
    const signIn = await t.handle(
      new Request(`${t.publicUrl}/api/v1/session`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(erin.basic),
      }),
    );
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    const csrf = ((await signIn.json()) as { csrf_token: string }).csrf_token;
    const bySession = await events({ cookie });
    const byPassword = await events({
      authorization: `Basic ${Buffer.from(`${erin.basic.username}:${erin.basic.password}`).toString("base64")}`,
    });
    expect(await t.services.accessWatch.sweep()).toBe(0); // all still good

    expect((await dave.api("DELETE", `/api/v1/tokens/${tokens.body.items[0].id}`)).status).toBe(204);
    expect(await t.services.accessWatch.sweep()).toBe(1);
    expect(await untilEnd(byToken)).toEqual([]);

    const signOut = await t.handle(
      new Request(`${t.publicUrl}/api/v1/session`, {
        method: "DELETE",
        headers: { cookie, origin: t.publicUrl, "x-csrf-token": csrf },
      }),
    );
    expect(signOut.status).toBeLessThan(300);
    expect(await t.services.accessWatch.sweep()).toBe(1);
    expect(await untilEnd(bySession)).toEqual([]);

    expect((await t.api("PATCH", `/api/v1/users/${erin.principal.id}`, { body: { disabled: true } })).status).toBe(200);
    expect(await t.services.accessWatch.sweep()).toBe(1);
    expect(await untilEnd(byPassword)).toEqual([]);
  });

  test("the watch's own timer ends it within about a second", async () => {
    const frank = await t.user("frank");
    const stream = await events({ authorization: `Bearer ${frank.token}` });
    const ended = untilEnd(stream);
    const started = Date.now();
    expect((await t.api("PATCH", `/api/v1/users/${frank.principal.id}`, { body: { disabled: true } })).status).toBe(200);
    await waitFor(
      "the stream to end",
      async () => (await Promise.race([ended.then(() => true), Bun.sleep(50).then(() => false)])) || undefined,
      5_000,
    );
    // Not a timing assertion of the service's speed: a bound to tell "ended by the watch" from "never ended".
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});

describe("a relayed MCP event stream", () => {
  test("ends when its user is disabled, and the server's stream is let go", async () => {
    const server = scriptedServer();
    t.network.serve("https://streams.example", server.handler);
    const gina = await t.user("gina");
    const id = await connectedConnector(gina.api, "https://streams.example/mcp");
    server.mode = "stream";
    const res = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${gina.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "slow", arguments: {} } }),
      }),
    );
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const stream = sseReader(res, 3_000);
    expect((await stream.next()).data).toBe('{"tick":1}');
    expect(await t.services.accessWatch.sweep()).toBe(0);
    expect((await t.api("PATCH", `/api/v1/users/${gina.principal.id}`, { body: { disabled: true } })).status).toBe(200);
    expect(await t.services.accessWatch.sweep()).toBe(1);
    await untilEnd(stream);
    await waitFor("the server's stream to be cancelled", () => server.streams.cancelled === 1);
    server.release();
  });
});
