import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { sseReader } from "../support/sse";
import { waitFor } from "../support/wait";

// virtual_server.created|updated|deleted on the connectors' events stream and webhooks (docs/interface.md §9.1).
const SECRET = `whsec_${randomBytes(32).toString("base64")}`;
const verifier = new Webhook(SECRET);
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;
const delivered: { type: string; data: { id: string }; verified: boolean }[] = [];

beforeAll(async () => {
  // The clock at the real time: the webhook library refuses timestamps five minutes away from its own clock.
  t = await createTestApp({
    clock: steppedClock(Date.now()),
    env: { WEBHOOKS__URLS: "https://hooks.example/in", WEBHOOKS__SECRET: SECRET },
  });
  t.network.serve("https://hooks.example", async (request) => {
    const body = await request.text();
    let verified = true;
    try {
      verifier.verify(body, Object.fromEntries(request.headers));
    } catch {
      verified = false;
    }
    delivered.push({ ...JSON.parse(body), verified });
    return new Response(null, { status: 204 });
  });
  alice = await t.user("alice");
  bob = await t.user("bob");
});
afterAll(async () => {
  t.services.events.webhooks?.stop();
  await t.close();
});

const open = async (token: string) => {
  const response = await t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/events`, { headers: { authorization: `Bearer ${token}` } }),
  );
  expect(response.status).toBe(200);
  return sseReader(response);
};

async function next(stream: ReturnType<typeof sseReader>) {
  const e = await stream.nextEvent();
  return { type: e.event!, data: JSON.parse(e.data) };
}

describe("virtual server events", () => {
  test("created, updated and deleted reach the owner's stream, an administrator's and the webhooks; not another user's", async () => {
    const [mine, bobs, admins] = await Promise.all([open(alice.token), open(bob.token), open(t.admin.token)]);
    const c = (
      await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/mcp", metadata: { name: "C" } } })
    ).body.id;
    const vs = (await alice.api("POST", "/api/v1/virtual-servers", { body: { name: "Mine", members: [{ connector_id: c }] } }))
      .body;
    t.clock.advance(1000);
    await alice.api("PATCH", `/api/v1/virtual-servers/${vs.id}`, { body: { name: "Renamed", members: [] } });
    t.clock.advance(1000);
    expect((await alice.api("DELETE", `/api/v1/virtual-servers/${vs.id}`)).status).toBe(204);

    const seen = [await next(mine), await next(mine), await next(mine), await next(mine)];
    expect(seen.map((e) => e.type)).toEqual([
      "connector.created",
      "virtual_server.created",
      "virtual_server.updated",
      "virtual_server.deleted",
    ]);
    expect(seen[1]!.data).toEqual({
      id: vs.id,
      owner_id: alice.principal.id,
      name: "Mine",
      members: [c],
      updated_at: vs.updated_at,
    });
    expect(seen[2]!.data).toMatchObject({ id: vs.id, name: "Renamed", members: [] });
    expect(seen[3]!.data).toMatchObject({ id: vs.id, name: "Renamed", members: [] });
    expect(Date.parse(seen[3]!.data.updated_at)).toBeGreaterThan(Date.parse(seen[2]!.data.updated_at));
    expect((await next(admins)).type).toBe("connector.created");
    expect((await next(admins)).type).toBe("virtual_server.created");

    // Bob's first event is his own: none of Alice's came before it.
    const his = (await bob.api("POST", "/api/v1/virtual-servers", { body: { name: "His", members: [] } })).body.id;
    expect(await next(bobs)).toMatchObject({ type: "virtual_server.created", data: { id: his } });
    for (const stream of [mine, bobs, admins]) stream.close();

    const hooks = await waitFor("the webhooks", () => {
      const got = delivered.filter((d) => d.data.id === vs.id);
      return got.length >= 3 && got;
    });
    expect(hooks.map((d) => d.type)).toEqual(["virtual_server.created", "virtual_server.updated", "virtual_server.deleted"]);
    expect(hooks.every((d) => d.verified)).toBe(true);
  });

  test("a deleted connector leaves each of its virtual servers with an updated event, before its own deleted event", async () => {
    const dave = await t.user("dave");
    const stream = await open(dave.token);
    const make = async (name: string) =>
      (await dave.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/mcp", metadata: { name } } })).body.id;
    const [gone, stays] = [await make("Gone"), await make("Stays")];
    const one = (
      await dave.api("POST", "/api/v1/virtual-servers", {
        body: { name: "1", members: [{ connector_id: gone }, { connector_id: stays }] },
      })
    ).body.id;
    const two = (await dave.api("POST", "/api/v1/virtual-servers", { body: { name: "2", members: [{ connector_id: gone }] } }))
      .body.id;
    const other = (await dave.api("POST", "/api/v1/virtual-servers", { body: { name: "3", members: [{ connector_id: stays }] } }))
      .body.id;
    for (let i = 0; i < 5; i++) await next(stream);
    expect((await dave.api("DELETE", `/api/v1/connectors/${gone}`)).status).toBe(204);
    const seen = [await next(stream), await next(stream), await next(stream)];
    expect(
      seen
        .map((e) => [e.type, e.data.id])
        .slice(0, 2)
        .sort(),
    ).toEqual(
      [
        ["virtual_server.updated", one],
        ["virtual_server.updated", two],
      ].sort(),
    );
    expect(seen.find((e) => e.data.id === one)!.data.members).toEqual([stays]);
    expect(seen.find((e) => e.data.id === two)!.data.members).toEqual([]);
    expect(seen[2]).toMatchObject({ type: "connector.deleted", data: { id: gone } });
    expect(seen.map((e) => e.data.id)).not.toContain(other);
    stream.close();
  });

  test("a deleted user's virtual servers each get their deleted event", async () => {
    const carol = await t.user("carol");
    const stream = await open(t.admin.token);
    const vs = (await carol.api("POST", "/api/v1/virtual-servers", { body: { name: "Carol's", members: [] } })).body.id;
    expect((await next(stream)).type).toBe("virtual_server.created");
    expect((await t.api("DELETE", `/api/v1/users/${carol.principal.id}`)).status).toBe(204);
    expect(await next(stream)).toMatchObject({ type: "virtual_server.deleted", data: { id: vs, owner_id: carol.principal.id } });
    stream.close();
  });
});
