import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { startEverything, type Peer } from "../peers/everything";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector, mcpClient, toolText } from "../support/mcp";
import { MODERN, modernClient, modernRequest } from "../support/modern";
import { byHand, pkce } from "../support/oauth-by-hand";
import { approveInForms } from "../support/oauth-client";

// A virtual server for 2026-07-28 clients: the MCP SDK v2 client pinned to that revision (and raw requests) at a
// virtual server of two connectors to server-everything (prefixes a and b), next to a 2025 client of the same
// virtual server. The service reaches server-everything over a real socket; clients reach the service through
// `app.handle`.
let everything: Peer;
let t: TestApp;
let mcpUrl: string;

beforeAll(async () => {
  [everything, t] = await Promise.all([startEverything(), createTestApp({ realNetwork: true })]);
  const [a, b] = [await connectedConnector(t.api, everything.url), await connectedConnector(t.api, everything.url)];
  const created = await t.api("POST", "/api/v1/virtual-servers", {
    body: {
      name: "Both",
      members: [
        { connector_id: a, prefix: "a" },
        { connector_id: b, prefix: "b" },
      ],
    },
  });
  expect(created.status).toBe(201);
  mcpUrl = created.body.mcp_url;
}, 30_000);
afterAll(async () => {
  await t.close();
  await everything.stop();
});

const as = (token: string) => (request: Request) => {
  const headers = new Headers(request.headers);
  headers.set("authorization", `Bearer ${token}`);
  return t.handle(new Request(request, { headers }));
};

test("a 2026-07-28 client discovers, lists the members' tools by their prefixed names and calls them", async () => {
  const modern = await modernClient(mcpUrl, as(t.admin.token));
  const names = (await modern.client.listTools()).tools.map((tool) => tool.name);
  expect(names).toContain("a__echo");
  expect(names).toContain("b__echo");
  expect(toolText(await modern.client.callTool({ name: "b__echo", arguments: { message: "modern" } }))).toBe("Echo: modern");
  expect(modern.sent.every((h) => h["mcp-session-id"] === undefined)).toBe(true);
  // A 2025 session of the same virtual server at the same time.
  const legacy = await mcpClient(mcpUrl, { token: t.admin.token }, t.handle);
  expect(toolText(await legacy.client.callTool({ name: "a__echo", arguments: { message: "legacy" } }))).toBe("Echo: legacy");
  await legacy.close();
  await modern.close();
});

test("server/discover names the virtual server and what it offers", async () => {
  const response = await as(t.admin.token)(modernRequest(mcpUrl, { method: "server/discover" }));
  const { result } = await response.json();
  expect(result).toMatchObject({ supportedVersions: [MODERN], resultType: "complete" });
  expect(result.capabilities.tools).toBeDefined();
  expect(result._meta["io.modelcontextprotocol/serverInfo"].name).toBeString();
});

test("a member's elicitation during a call reaches the 2026-07-28 client as input_required, and the call completes", async () => {
  const asked: string[] = [];
  const client = new ModernClient({ name: "vs-parked", version: "1.0.0" }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: MODERN } },
  } as never);
  client.setRequestHandler("elicitation/create", async (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: { color: "green" } };
  });
  await client.connect(new ModernTransport(new URL(mcpUrl), { fetch: (i, init) => as(t.admin.token)(new Request(i, init)) }));
  const result = await client.callTool({ name: "a__trigger-elicitation-request", arguments: {} });
  expect(asked).toHaveLength(1);
  expect(JSON.stringify(result)).toContain("green");
  await client.close();
});

test("a name no member has is -32602, and another user's request is refused at the door", async () => {
  const call = { method: "tools/call", params: { name: "c__echo", arguments: { message: "x" } } };
  const unknown = await (await as(t.admin.token)(modernRequest(mcpUrl, call))).json();
  expect(unknown.error).toMatchObject({ code: -32602 });
  const other = await t.user(`vs-modern-${crypto.randomUUID().slice(0, 8)}`);
  const refused = await as(other.token)(modernRequest(mcpUrl, { method: "tools/list" }));
  expect(refused.status).toBe(404);
  expect(refused.headers.get("content-type")).toContain("application/problem+json");
});

test("an access token bound to another resource is refused even while the owner's bridge is open", async () => {
  const alice = await t.user(`alice-${crypto.randomUUID().slice(0, 8)}`);
  const connector = await connectedConnector(alice.api, everything.url);
  const make = async (name: string) =>
    (await alice.api("POST", "/api/v1/virtual-servers", { body: { name, members: [{ connector_id: connector, prefix: "e" }] } }))
      .body as { mcp_url: string };
  const [a, b] = [await make("A"), await make("B")];
  const oauth = byHand(t.handle, t.publicUrl);
  const client_id = await oauth.register();
  const tokenFor = async (resource: string) => {
    const { verifier, challenge } = pkce();
    const { location } = await approveInForms(t.handle, oauth.authorizeUrl({ client_id, challenge, resource }), alice.basic);
    const code = new URL(location).searchParams.get("code")!;
    return ((await (await oauth.exchange({ client_id, verifier, code }, resource)).json()) as { access_token: string })
      .access_token;
  };
  const [forA, forB, forConnector] = [
    await tokenFor(a.mcp_url),
    await tokenFor(b.mcp_url),
    await tokenFor(`${t.publicUrl}/api/v1/connectors/${connector}/mcp`),
  ];
  const call = { method: "tools/call", params: { name: "e__echo", arguments: { message: "x" } } };
  // A's own token opens the bridge (the same OAuth client, the same user: only the resource differs).
  expect((await as(forA)(modernRequest(a.mcp_url, call))).status).toBe(200);
  for (const token of [forB, forConnector]) {
    const refused = await as(token)(modernRequest(a.mcp_url, call));
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain("invalid_token");
  }
});

test("a virtual server's event streams end when the caller loses access: a session's GET stream, a 2026-07-28 listen", async () => {
  const erin = await t.user(`erin-${crypto.randomUUID().slice(0, 8)}`);
  const connector = await connectedConnector(erin.api, everything.url);
  const created = await erin.api("POST", "/api/v1/virtual-servers", {
    body: { name: "Erin's", members: [{ connector_id: connector, prefix: "e" }] },
  });
  const url = created.body.mcp_url as string;
  const send = as(erin.token);
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const init = await send(
    new Request(url, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "erin", version: "1" } },
      }),
    }),
  );
  const session = init.headers.get("mcp-session-id")!;
  await init.text();
  const withSession = { ...headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" };
  await send(
    new Request(url, { method: "POST", headers: withSession, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' }),
  );
  const get = await send(new Request(url, { method: "GET", headers: { ...withSession, accept: "text/event-stream" } }));
  expect(get.headers.get("content-type")).toContain("text/event-stream");
  const listen = await send(
    modernRequest(url, { method: "subscriptions/listen", params: { notifications: { toolsListChanged: true } } }),
  );
  expect(listen.headers.get("content-type")).toContain("text/event-stream");
  expect((await t.api("PATCH", `/api/v1/users/${erin.principal.id}`, { body: { disabled: true } })).status).toBe(200);
  const ends = async (response: Response) => {
    const reader = response.body!.getReader();
    return Promise.race([
      (async () => {
        for (let r = await reader.read(); !r.done; r = await reader.read());
        return true;
      })(),
      Bun.sleep(5_000).then(() => false),
    ]);
  };
  expect(await Promise.all([ends(get), ends(listen)])).toEqual([true, true]);
});

test("a 2026-07-28 message over PROXY__MAX_MESSAGE_BYTES is refused at the virtual server, its member never asked", async () => {
  const small = await createTestApp({ realNetwork: true, env: { PROXY__MAX_MESSAGE_BYTES: "2048" } });
  try {
    const member = await connectedConnector(small.api, everything.url);
    const created = await small.api("POST", "/api/v1/virtual-servers", {
      body: { name: "Small", members: [{ connector_id: member, prefix: "a" }] },
    });
    const call = (message: string) => {
      const request = modernRequest(created.body.mcp_url, {
        method: "tools/call",
        params: { name: "a__echo", arguments: { message } },
      });
      request.headers.set("authorization", `Bearer ${small.admin.token}`);
      return small.handle(request);
    };
    const fits = await call("x".repeat(100));
    expect(JSON.stringify(await fits.json())).toContain("Echo: xxx");
    const refused = await call("x".repeat(3000));
    expect((await refused.json()).error.message).toContain("A message is at most 2048 bytes");
    // The member's proxy URL saw the call that fits only: the one over the limit stopped at the virtual server.
    await small.services.audit.flush();
    const audit = await small.api("GET", `/api/v1/audit?connector_id=${member}&method=tools/call`);
    expect(audit.body.items).toHaveLength(1);
  } finally {
    await small.close();
  }
});
