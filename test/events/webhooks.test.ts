import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { loadConfig } from "../../src/config/load";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { waitFor } from "../support/wait";

// Outbound webhooks, through app.handle: a receiver in the test (on the fake network) checks every delivery with the
// Standard Webhooks reference library, fails some on purpose, and hangs on one. The clock starts at the real time:
// the library refuses timestamps five minutes away from its own clock.
const SECRET = `whsec_${randomBytes(32).toString("base64")}`;
const verifier = new Webhook(SECRET);

type Delivery = { id: string; type: string; data: { id: string; state: string }; verified: boolean };

let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
const received: Delivery[] = [];
let answer: "ok" | "fail" | "hang" = "ok";
const hung: (() => void)[] = [];

beforeAll(async () => {
  t = await createTestApp({
    clock: steppedClock(Date.now()),
    env: { WEBHOOKS__URLS: "https://hooks.example/in", WEBHOOKS__SECRET: SECRET },
  });
  t.network.serve("https://hooks.example", async (request) => {
    const body = await request.text();
    const headers = Object.fromEntries(request.headers);
    let verified = true;
    try {
      verifier.verify(body, headers);
    } catch {
      verified = false;
    }
    const parsed = JSON.parse(body);
    received.push({ id: headers["webhook-id"]!, type: parsed.type, data: parsed.data, verified });
    if (answer === "hang")
      return new Promise<Response>((resolve) => hung.push(() => resolve(new Response(null, { status: 503 }))));
    return new Response(null, { status: answer === "ok" ? 204 : 500 });
  });
  alice = await t.user("alice");
});
afterAll(async () => {
  for (const release of hung.splice(0)) release();
  t.services.events.webhooks?.stop();
  await t.close();
});

const deliveredFor = (connector: string) => received.filter((d) => d.data.id === connector);

describe("webhooks", () => {
  test("every event is posted, signed (verified by the Standard Webhooks library), in order", async () => {
    answer = "ok";
    const id = (await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/signed" } })).body.id;
    await alice.api("DELETE", `/api/v1/connectors/${id}`);
    const got = await waitFor("two deliveries", () => deliveredFor(id).length >= 2 && deliveredFor(id));
    expect(got.map((d) => d.type)).toEqual(["connector.created", "connector.deleted"]);
    expect(got.every((d) => d.verified)).toBe(true);
    expect(Number(got[0]!.id.slice(4))).toBeLessThan(Number(got[1]!.id.slice(4)));
    // The library's check is real: the same delivery with another body does not verify.
    expect(() =>
      verifier.verify("{}", {
        "webhook-id": got[0]!.id,
        "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
        "webhook-signature": "v1,AAAA",
      }),
    ).toThrow();
  });

  test("a failing receiver gets the same event again with backoff, then the next ones, none lost or reordered", async () => {
    answer = "fail";
    const id = (await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/retried" } })).body.id;
    await waitFor("the first attempt", () => deliveredFor(id).length === 1);
    await alice.api("DELETE", `/api/v1/connectors/${id}`);
    await t.runJobs();
    // Not yet due: no second attempt, and the later event waits behind the first.
    expect(deliveredFor(id)).toHaveLength(1);
    t.clock.advance(1_000);
    await t.runJobs();
    expect(deliveredFor(id)).toHaveLength(2);
    answer = "ok";
    t.clock.advance(1_999);
    await t.runJobs();
    expect(deliveredFor(id)).toHaveLength(2);
    t.clock.advance(1);
    await t.runJobs();
    const got = deliveredFor(id);
    expect(got.map((d) => d.type)).toEqual(["connector.created", "connector.created", "connector.created", "connector.deleted"]);
    // A retry is the same message: receivers deduplicate on webhook-id.
    expect(new Set(got.slice(0, 3).map((d) => d.id)).size).toBe(1);
  });

  test("a receiver that never answers holds up no request", async () => {
    answer = "hang";
    const started = performance.now();
    const id = (await alice.api("POST", "/api/v1/connectors", { body: { url: "https://mcp.example/hung" } })).body.id;
    await waitFor("the hanging delivery", () => deliveredFor(id).length === 1);
    expect((await alice.api("GET", `/api/v1/connectors/${id}`)).status).toBe(200);
    expect((await alice.api("DELETE", `/api/v1/connectors/${id}`)).status).toBe(204);
    expect(performance.now() - started).toBeLessThan(1_000);
    for (const release of hung.splice(0)) release();
  });

  test("WEBHOOKS__URLS without WEBHOOKS__SECRET is refused at start", () => {
    expect(() => loadConfig({ WEBHOOKS__URLS: "https://hooks.example/in" })).toThrow("WEBHOOKS__SECRET");
  });
});
