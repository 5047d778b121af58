import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import type { Message, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import Ajv from "ajv";
import { a2aAgent, type A2AAgentHandler } from "../peers/a2a-agent";
import { createTestApp, type TestApp } from "../support/app";
import { authHeader, expectProblem } from "../support/api";

// The official A2A 0.3.0 JSON schema (https://github.com/a2aproject/A2A/blob/v0.3.0/specification/json/a2a.json), kept
// here so the repository tests alone.
const schema = await Bun.file(new URL("../fixtures/a2a-v0.3.0.schema.json", import.meta.url)).json();
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema(schema, "a2a");
const validateCard = ajv.compile({ $ref: "a2a#/definitions/AgentCard" });

// The A2A SDK's own agent, in-process at its origin; the service through app.handle.
let agent: A2AAgentHandler;
let service: TestApp;
let adminBasic: string;

beforeAll(async () => {
  service = await createTestApp();
  agent = a2aAgent("https://agent.example");
  service.network.serve("https://agent.example", agent.handler);
  adminBasic = authHeader(service.admin.basic);
});
afterAll(() => service.close());

const register = (body: unknown) => service.api("POST", "/api/v1/providers", { body });
const cardPath = (id: string) => `/api/v1/a2a/${id}/.well-known/agent-card.json`;
const getCard = (id: string, headers: Record<string, string> = { authorization: adminBasic }) =>
  service.handle(new Request(`${service.publicUrl}${cardPath(id)}`, { headers }));
/** A fetch into the service, for the A2A SDK's client. */
const fetchService = ((input: RequestInfo | URL, init?: RequestInit) => service.handle(new Request(input, init))) as typeof fetch;

/** Every card the endpoint serves: valid against the official schema, and what the A2A TCK asks of cards. */
function assertServable(card: Record<string, any>) {
  const valid = validateCard(card);
  expect({ valid, errors: validateCard.errors ?? null }).toEqual({ valid: true, errors: null });
  expect(card.protocolVersion).toBe("0.3.0");
  expect(card.preferredTransport).toBe("JSONRPC");
  expect(card.skills.length).toBeGreaterThan(0);
  for (const skill of card.skills) {
    for (const field of ["id", "name", "description"]) expect(typeof skill[field]).toBe("string");
    expect(Array.isArray(skill.tags)).toBe(true);
  }
  const text = JSON.stringify(card);
  expect(text).not.toContain("null");
  expect(text.includes(service.admin.basic.password)).toBe(false);
}

describe("registering providers", () => {
  test("by URL: fetched, checked and served with this service as its endpoint and HTTP Basic declared", async () => {
    const res = await register({ agent_card_url: agent.cardUrl });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/api/v1/providers/${res.body.id}`);
    expect(res.body).toMatchObject({
      name: "Echo agent",
      agent_card_url: agent.cardUrl,
      agent_url: agent.url,
      refresh_error: null,
    });
    const card = await (await getCard(res.body.id)).json();
    assertServable(card);
    expect(card.url).toBe(`${service.publicUrl}/api/v1/a2a/${res.body.id}/`);
    expect(card.securitySchemes).toEqual({ basic: { type: "http", scheme: "basic", description: expect.any(String) } });
    expect(card.security).toEqual([{ basic: [] }]);
    expect(card.additionalInterfaces).toEqual([{ transport: "JSONRPC", url: card.url }]);
    expect(card.skills).toEqual(agent.card.skills);
  });

  test("inline, without protocolVersion: served with the defaults explicit and unset optional fields absent", async () => {
    const minimal = {
      name: "Minimal",
      description: "Nothing more",
      url: agent.url,
      version: "0.1.0",
      capabilities: {},
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [{ id: "s", name: "S", description: "d", tags: [] }],
    };
    const res = await register({ agent_card: minimal });
    expect(res.status).toBe(201);
    const card = await (await getCard(res.body.id)).json();
    assertServable(card);
    for (const absent of ["documentationUrl", "iconUrl", "provider", "signatures", "supportsAuthenticatedExtendedCard"])
      expect(card).not.toHaveProperty(absent);
  });

  test("only administrators register, refresh or remove providers; users list and read them", async () => {
    const registered = (await register({ agent_card_url: agent.cardUrl })).body;
    const user = (await service.user("carla")).api;
    expectProblem(await user("POST", "/api/v1/providers", { body: { agent_card_url: agent.cardUrl } }), 403);
    const list = await user("GET", "/api/v1/providers");
    expect(list.status).toBe(200);
    expect(list.body.items.map((p: { id: string }) => p.id)).toContain(registered.id);
    expect((await user("GET", `/api/v1/providers/${registered.id}`)).body.name).toBe("Echo agent");
    expectProblem(await user("POST", `/api/v1/providers/${registered.id}/refresh`), 403);
    expectProblem(await user("DELETE", `/api/v1/providers/${registered.id}`), 403);
  });

  test.each([
    ["a card without skills", { agent_card: agentCardWithout("skills") }, "body.agent_card.skills"],
    ["a card without a name", { agent_card: agentCardWithout("name") }, "body.agent_card.name"],
    [
      "a skill without tags",
      { agent_card: { ...validCard(), skills: [{ id: "x", name: "X", description: "d" }] } },
      "body.agent_card.skills.0.tags",
    ],
    ["a card whose url is not a URL", { agent_card: { ...validCard(), url: "not a url" } }, "body.agent_card.url"],
    [
      "a capability of the wrong type",
      { agent_card: { ...validCard(), capabilities: { streaming: "yes" } } },
      "body.agent_card.capabilities.streaming",
    ],
    ["neither a URL nor a card", {}, "body"],
    ["both a URL and a card", { agent_card_url: "https://a.example/card", agent_card: validCard() }, "body"],
    ["a card URL that is not http(s)", { agent_card_url: "ftp://a.example/card" }, "body.agent_card_url"],
    ["a card URL at the metadata address", { agent_card_url: "http://169.254.169.254/latest/meta-data" }, "body.agent_card_url"],
    ["an unreachable card URL", { agent_card_url: "http://127.0.0.1:9/unreachable.json" }, "body.agent_card_url"],
  ])("%s is a 422 naming the field", async (_name, body, field) => {
    const res = await register(body);
    expectProblem(res, 422);
    expect(res.body.errors[0].field).toBe(field);
  });

  test("an oversized card and a card that is not A2A are refused with a 422 that says why", async () => {
    service.network.serve("https://cards.example", (r) =>
      r.url.endsWith("/big")
        ? Response.json({ ...validCard(), description: "x".repeat(300_000) })
        : Response.json({ hello: "world" }),
    );
    const tooBig = await register({ agent_card_url: "https://cards.example/big" });
    expectProblem(tooBig, 422);
    expect(tooBig.body.detail).toContain("larger than");
    const notACard = await register({ agent_card_url: "https://cards.example/other" });
    expectProblem(notACard, 422);
    expect(notACard.body.detail).toContain("not a valid A2A 0.3.0 agent card");
  });
});

describe("the agent card endpoint", () => {
  let id: string;
  beforeAll(async () => {
    id = (await register({ agent_card_url: agent.cardUrl })).body.id;
  });

  test("needs HTTP Basic credentials of a user: anything else is a 401 with a Basic challenge, never a card", async () => {
    const token = (await service.api("POST", "/api/v1/tokens", { body: { name: "t" } })).body.token;
    for (const headers of [
      {},
      { authorization: "Basic " + btoa("admin:wrong") },
      { authorization: "Basic %%%garbled" },
      { authorization: "Basic " + btoa("no-colon") },
      { authorization: `Bearer ${token}` },
      { authorization: "Digest x" },
    ] as Record<string, string>[]) {
      const res = await getCard(id, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain("Basic");
      const body = await res.json();
      expect(body).not.toHaveProperty("skills");
    }
  });

  test("a provider id that is not a UUID is a 422; an unknown one a 404", async () => {
    const bad = await getCard("not-a-uuid");
    expect(bad.status).toBe(422);
    expect(bad.headers.get("content-type")).toStartWith("application/problem+json");
    const unknown = await getCard("00000000-0000-4000-8000-000000000000");
    expect(unknown.status).toBe(404);
  });

  test("ETag and If-None-Match: 304 while the card is unchanged, 200 with a new ETag after a refresh changed it", async () => {
    const first = await getCard(id);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);
    expect(first.headers.get("cache-control")).toContain("private");
    const again = await getCard(id, { authorization: adminBasic, "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");

    const before = agent.card.description;
    agent.card.description = "Echoes what it is told, now refreshed";
    try {
      const refreshed = await service.api("POST", `/api/v1/providers/${id}/refresh`);
      expect(refreshed.status).toBe(200);
      const changed = await getCard(id, { authorization: adminBasic, "if-none-match": etag });
      expect(changed.status).toBe(200);
      expect(changed.headers.get("etag")).not.toBe(etag);
      expect((await changed.json()).description).toBe("Echoes what it is told, now refreshed");
    } finally {
      agent.card.description = before;
    }
  });
});

describe("A2A clients through the service", () => {
  let id: string;
  beforeAll(async () => {
    id = (await register({ agent_card_url: agent.cardUrl })).body.id;
  });

  /** @a2a-js/sdk's client, resolving the card at the service and authenticating with HTTP Basic. */
  async function sdkClient() {
    const fetchImpl = ((input: RequestInfo | URL, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", adminBasic);
      return fetchService(input, { ...init, headers });
    }) as typeof fetch;
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
    return factory.createFromUrl(`${service.publicUrl}/api/v1/a2a/${id}/`);
  }

  const message = (text: string): Message => ({
    kind: "message",
    role: "user",
    messageId: crypto.randomUUID(),
    parts: [{ kind: "text", text }],
  });

  test("message/send reaches the agent through the proxy, without the caller's credentials", async () => {
    const client = await sdkClient();
    agent.requests.length = 0;
    const reply = (await client.sendMessage({ message: message("hello agent") })) as Message;
    expect(reply.kind).toBe("message");
    expect(reply.parts[0]).toEqual({ kind: "text", text: "echo: hello agent" });
    expect(agent.requests.length).toBe(1);
    expect(agent.requests[0]!.get("authorization")).toBeNull();
  });

  test("message/stream events arrive as the agent sends them", async () => {
    const client = await sdkClient();
    const arrivals: { at: number; event: Task | Message | TaskStatusUpdateEvent }[] = [];
    const started = performance.now();
    for await (const event of client.sendMessageStream({ message: message("stream: please") })) {
      arrivals.push({ at: performance.now() - started, event: event as TaskStatusUpdateEvent });
    }
    const updates = arrivals.filter((a) => (a.event as TaskStatusUpdateEvent).kind === "status-update");
    expect(updates.length).toBe(4);
    const last = updates.at(-1)!.event as TaskStatusUpdateEvent;
    expect(last.status.state).toBe("completed");
    expect(last.final).toBe(true);
    // 150 ms apart at the agent: not buffered by the proxy until the end.
    expect(updates[1]!.at - updates[0]!.at).toBeGreaterThan(100);
    expect(updates[2]!.at - updates[1]!.at).toBeGreaterThan(100);
  });

  test("the agent gone: a refresh is a 502 that keeps the last card and records why; a call is a 502", async () => {
    const own = a2aAgent("https://short-lived.example", { name: "Short-lived" });
    service.network.serve("https://short-lived.example", own.handler);
    const ownId = (await register({ agent_card_url: own.cardUrl })).body.id;
    service.network.remove("https://short-lived.example");
    const refresh = await service.api("POST", `/api/v1/providers/${ownId}/refresh`);
    expectProblem(refresh, 502);
    const provider = (await service.api("GET", `/api/v1/providers/${ownId}`)).body;
    expect(provider.refresh_error).toContain("connection refused");
    expect((await (await getCard(ownId)).json()).name).toBe("Short-lived");
    const call = await fetchService(`${service.publicUrl}/api/v1/a2a/${ownId}/`, {
      method: "POST",
      headers: { authorization: adminBasic, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: message("anyone?") } }),
    });
    expect(call.status).toBe(502);
    expect((await service.api("DELETE", `/api/v1/providers/${ownId}`)).status).toBe(204);
    expect((await getCard(ownId)).status).toBe(404);
  });
});

function validCard() {
  return {
    name: "Valid",
    description: "A valid card",
    url: "https://agent.example/a2a",
    version: "1.0.0",
    capabilities: {},
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "s", name: "S", description: "d", tags: ["t"] }],
  };
}

function agentCardWithout(field: string) {
  const card: Record<string, unknown> = validCard();
  delete card[field];
  return card;
}
