import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearerMcp } from "../peers/bearer-server";
import { scriptedServer } from "../peers/scripted-server";
import { expectProblem } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// PATCH /api/v1/connectors/{id}, through app.handle: metadata changes in place; new headers are proven against the
// server before they replace the old ones, so a wrong rotation leaves the connector working as it was.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const keyed = bearerMcp("old-key");
const PING = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://keyed.example", keyed.handler);
  t.network.serve("https://open.example", scriptedServer().handler);
  alice = await t.user("alice");
});
afterAll(() => t.close());

const ping = (id: string) =>
  t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${alice.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: PING,
    }),
  );

describe("PATCH a connector", () => {
  test("metadata: the fields given replace the stored ones, the others stay", async () => {
    const created = await alice.api("POST", "/api/v1/connectors", {
      body: { url: "https://open.example/mcp", metadata: { name: "Old name", description: "Kept" } },
    });
    const patched = await alice.api("PATCH", `/api/v1/connectors/${created.body.id}`, {
      body: { metadata: { name: "New name" } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.metadata).toEqual({ name: "New name", description: "Kept" });
    expect((await alice.api("GET", `/api/v1/connectors/${created.body.id}`)).body.metadata.name).toBe("New name");
    expectProblem(await alice.api("PATCH", `/api/v1/connectors/${created.body.id}`, { body: {} }), 422);
    expectProblem(await alice.api("PATCH", `/api/v1/connectors/${created.body.id}`, { body: { state: "connected" } }), 422);
    const bob = await t.user("bob");
    expectProblem(
      await bob.api("PATCH", `/api/v1/connectors/${created.body.id}`, { body: { metadata: { name: "Mine now" } } }),
      404,
    );
  });

  test("headers: wrong new ones are refused (422) and the old ones keep working; right ones replace them", async () => {
    const id = await connectedConnector(alice.api, "https://keyed.example/mcp", { Authorization: "Bearer old-key" });
    const refused = await alice.api("PATCH", `/api/v1/connectors/${id}`, {
      body: { headers: { Authorization: "Bearer typo-key" } },
    });
    expectProblem(refused, 422);
    expect(refused.body.type).toBe("/problems/upstream-rejected-credentials");
    const still = await alice.api("GET", `/api/v1/connectors/${id}`);
    expect(still.body).toMatchObject({ state: "connected", disconnect_reason: null, header_names: ["Authorization"] });
    expect((await ping(id)).status).toBe(200);
    expect(keyed.seen.at(-1)!.authorization).toBe("Bearer old-key");

    // The server's owner rotates the key; the connector follows.
    keyed.setToken("new-key");
    const rotated = await alice.api("PATCH", `/api/v1/connectors/${id}`, {
      body: { headers: { Authorization: "Bearer new-key" }, metadata: { name: "Rotated" } },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ state: "connected", metadata: { name: "Rotated" } });
    expect((await ping(id)).status).toBe(200);
    expect(keyed.seen.at(-1)!.authorization).toBe("Bearer new-key");
    // Never shown back.
    expect(JSON.stringify(rotated.body)).not.toContain("new-key");
  });

  test("headers only for a connector connected with headers (409), never hop-by-hop ones (422)", async () => {
    const open = await connectedConnector(alice.api, "https://open.example/other");
    expectProblem(
      await alice.api("PATCH", `/api/v1/connectors/${open}`, { body: { headers: { Authorization: "Bearer x" } } }),
      409,
    );
    const created = (await alice.api("POST", "/api/v1/connectors", { body: { url: "https://keyed.example/never" } })).body.id;
    expectProblem(
      await alice.api("PATCH", `/api/v1/connectors/${created}`, { body: { headers: { Authorization: "Bearer x" } } }),
      409,
    );
    keyed.setToken("k3");
    const id = await connectedConnector(alice.api, "https://keyed.example/third", { Authorization: "Bearer k3" });
    expectProblem(await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { headers: { Connection: "close" } } }), 422);
    expectProblem(await alice.api("PATCH", `/api/v1/connectors/${id}`, { body: { headers: {} } }), 422);
    expect((await ping(id)).status).toBe(200);
  });
});
