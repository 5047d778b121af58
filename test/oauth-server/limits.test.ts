import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { UNUSED_CLIENT_TTL_MS } from "../../src/oauth-server/model";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce, REDIRECT_URI } from "../support/oauth-by-hand";
import { approveInForms } from "../support/oauth-client";
import { queryRows } from "../support/store";

// What strangers can make the authorization server keep: an authorization request is stored only once a person has
// signed in (a few per person), and registrations are bounded per client address under the service-wide ceiling,
// so one address cannot use them up for everyone else.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let proxy: string;
const count = async (table: "as_requests" | "as_clients") =>
  Number((await queryRows<{ n: number }>(t.deps, sql.raw(`SELECT count(*) AS n FROM ${table}`)))[0]!.n);

/** A registration from `address`: the response. */
const registerFrom = (app: TestApp, address: string) =>
  app.handle(
    new Request(`${app.publicUrl}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-test-client": address },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
    }),
  );

beforeAll(async () => {
  t = await createTestApp({ env: { AUTHSERVER__MAX_REGISTRATIONS_PER_ADDRESS: "3" } });
  t.network.serve("https://mcp.example", scriptedServer().handler);
  t.network.serve("https://client.example", (request) =>
    Response.json({ client_id: request.url, redirect_uris: [REDIRECT_URI] }),
  );
  alice = await t.user("alice");
  proxy = `${t.publicUrl}/api/v1/connectors/${await connectedConnector(alice.api, "https://mcp.example/mcp")}/mcp`;
});
afterAll(() => t.close());

describe("pending authorization requests", () => {
  test("anonymous visits of the authorization endpoint store nothing, whatever client they name", async () => {
    const oauth = byHand(t.handle, t.publicUrl);
    const registered = await oauth.register();
    const [requests, clients] = [await count("as_requests"), await count("as_clients")];
    for (let i = 0; i < 40; i++) {
      const client_id = i % 2 ? registered : `https://client.example/client-${i}.json`;
      const res = await t.handle(
        new Request(oauth.authorizeUrl({ client_id, challenge: pkce().challenge, resource: proxy, state: "x".repeat(2000) }), {
          headers: { "x-test-client": "198.51.100.1" },
        }),
      );
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('value="sign-in"');
    }
    expect(await count("as_requests")).toBe(requests);
    expect(await count("as_clients")).toBe(clients);
  });

  test("a person keeps at most 10 open consent pages: the oldest stops working, the newest works", async () => {
    const oauth = byHand(t.handle, t.publicUrl);
    const client_id = await oauth.register();
    const url = oauth.authorizeUrl({ client_id, challenge: pkce().challenge, resource: proxy });
    const post = (fields: Record<string, string>) =>
      t.handle(
        new Request(url, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(fields).toString(),
        }),
      );
    const handles: string[] = [];
    for (let i = 0; i < 12; i++) {
      t.clock.advance(1_000);
      const consent = await post({ step: "sign-in", username: "alice", password: alice.basic.password });
      expect(consent.status).toBe(200);
      handles.push(/name="handle" value="([^"]+)"/.exec(await consent.text())![1]!);
    }
    expect(await count("as_requests")).toBe(10);
    const oldest = await post({ handle: handles[0]!, step: "consent", decision: "allow" });
    expect(oldest.status).toBe(400);
    expect(await oldest.text()).toContain("expired");
    const newest = await post({ handle: handles.at(-1)!, step: "consent", decision: "allow" });
    expect(newest.status).toBe(303);
    expect(new URL(newest.headers.get("location")!).searchParams.get("code")).toBeString();
  });
});

describe("registrations", () => {
  test("one address over AUTHSERVER__MAX_REGISTRATIONS_PER_ADDRESS is refused (429, Retry-After) while others still register", async () => {
    const start = t.clock.now();
    for (let i = 0; i < 3; i++) expect((await registerFrom(t, "203.0.113.7")).status).toBe(201);
    t.clock.advance(3_600_000);
    const refused = await registerFrom(t, "203.0.113.7");
    expect(refused.status).toBe(429);
    // The first of its registrations expires a day after it was made: then there is room again.
    expect(Number(refused.headers.get("retry-after"))).toBe((start + UNUSED_CLIENT_TTL_MS - t.clock.now()) / 1000);
    const body = await refused.json();
    expect(body.error).toBe("temporarily_unavailable");
    expect(body.error_description).toContain("this address");
    expect((await registerFrom(t, "198.51.100.9")).status).toBe(201);
  });

  test("IPv6 addresses count by their /64: one host's network cannot rotate its way past the bound", async () => {
    for (const address of ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff:ffff:ffff:fffe"])
      expect((await registerFrom(t, address)).status).toBe(201);
    expect((await registerFrom(t, "2001:db8:1:2:abcd::9")).status).toBe(429);
    expect((await registerFrom(t, "2001:db8:1:3::1")).status).toBe(201);
  });

  test("a registration a person has used no longer counts against its address", async () => {
    const oauth = byHand((request) => {
      request.headers.set("x-test-client", "192.0.2.55");
      return t.handle(request);
    }, t.publicUrl);
    const used = await oauth.register();
    await oauth.register();
    await oauth.register();
    expect((await registerFrom(t, "192.0.2.55")).status).toBe(429);
    await approveInForms(
      t.handle,
      oauth.authorizeUrl({ client_id: used, challenge: pkce().challenge, resource: proxy }),
      alice.basic,
    );
    expect((await registerFrom(t, "192.0.2.55")).status).toBe(201);
  });

  test("the service-wide ceiling still holds across addresses; unused registrations expire and make room", async () => {
    const small = await createTestApp({
      env: { AUTHSERVER__MAX_REGISTRATIONS_PER_ADDRESS: "3", AUTHSERVER__MAX_REGISTRATIONS: "4" },
    });
    try {
      for (let i = 0; i < 3; i++) expect((await registerFrom(small, "203.0.113.7")).status).toBe(201);
      expect((await registerFrom(small, "198.51.100.9")).status).toBe(201);
      const refused = await registerFrom(small, "192.0.2.200");
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBe(UNUSED_CLIENT_TTL_MS / 1000);
      expect((await refused.json()).error_description).toContain("at most 4");
      small.clock.advance(UNUSED_CLIENT_TTL_MS);
      expect((await registerFrom(small, "192.0.2.200")).status).toBe(201);
    } finally {
      await small.close();
    }
  });
});
