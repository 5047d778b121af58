import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { TABLES, type Row, type StoredTable } from "../../src/cli/tables";
import type { Store } from "../../src/db/store";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { pagedToolsServer } from "../peers/paged-tools";
import { statefulMcp } from "../peers/stateful-mcp";
import { scriptedOAuth } from "../peers/scripted-oauth";
import { readResponse } from "./api";
import { createTestApp, steppedClock } from "./app";
import { byHand, pkce } from "./oauth-by-hand";
import { approveInForms } from "./oauth-client";
import { finishCallback } from "./callback";
import { createBucketRepository } from "../../src/rate-limits/repository";
import { waitFor } from "./wait";
import { createHandoffStore } from "../../src/era-bridge/handoff-store";
import { createLegacySessionStore } from "../../src/era-bridge/legacy-session-store";
import { createSealer } from "../../src/secrets/sealer";

/**
 * A row or more in every table of the schema, each written by the service itself through its API, its MCP proxy and
 * its authorization server, as a person and their MCP clients would: users, an API token, a console session; a
 * connector with sealed headers, client secret and access token, tool pins (one tool changed since) and a captured
 * tool call in the audit trail; a connector connected by OAuth (a registered client with a secret, a grant) and one
 * waiting for its authorization; an MCP client registered with the service's own authorization server, its grants (a
 * connector's and a virtual server's), tokens and one more authorization waiting for consent; a virtual server with two members and a client session holding an upstream session; a 2025 client's session of a 2026-07-28-only server; connector events delivered to a webhook; an A2A provider; rate limits and a token bucket's row;
 * the scheduler's job leases. Leaves the store closed, every write done. `key` is the sealing key (32 bytes).
 */
export async function fillEveryTable(store: Store, key: Uint8Array): Promise<void> {
  const t = await createTestApp({
    store,
    sealingKey: key,
    clock: steppedClock(Date.now()),
    env: {
      AUDIT__CAPTURE: "arguments",
      WEBHOOKS__URLS: "https://hooks.example/in",
      WEBHOOKS__SECRET: `whsec_${randomBytes(32).toString("base64")}`,
    },
  });
  try {
    const tools = pagedToolsServer(["search", "fetch", "summarize"], 10);
    t.network.serve("https://tools.example", tools.handler);
    t.network.serve("https://hooks.example", () => new Response(null, { status: 204 }));
    // A server with sessions, for a virtual server's client session to hold an upstream session of (its id sealed).
    const withSessions = statefulMcp(() => {
      const server = new McpServer({ name: "sessions", version: "1.0.0" });
      server.registerTool("hello", { description: "Says hello" }, async () => ({ content: [{ type: "text", text: "hello" }] }));
      return server;
    });
    t.network.serve("https://sessions.example", withSessions.fetch);
    // An authorization server that registers confidential clients: the service keeps the secret it is given, sealed.
    const oauth = scriptedOAuth();
    t.network.serve(oauth.as, async (request) => {
      if (new URL(request.url).pathname !== "/register") return oauth.authorizationServer(request);
      const registered = await (await oauth.authorizationServer(request)).json();
      return Response.json(
        { ...registered, client_secret: "registered-client-secret", token_endpoint_auth_method: "client_secret_post" },
        { status: 201 },
      );
    });
    t.network.serve(oauth.mcp, oauth.mcpServer);

    const alice = await t.user("alice");
    must(await t.apiOf(null)("POST", "/api/v1/session", { body: alice.basic }), 201);

    // Headers, a client secret and an access token: every sealed column of a connector.
    const tooled = must(
      await alice.api("POST", "/api/v1/connectors", {
        body: {
          url: "https://tools.example/mcp",
          client_id: "tools-client",
          client_secret: "tools-client-secret",
          metadata: { name: "Tools" },
        },
      }),
      201,
    ).body.id;
    must(
      await alice.api("POST", `/api/v1/connectors/${tooled}/connect`, {
        body: { headers: { "x-api-key": "tools-api-key" }, accessToken: "tools-access-token" },
      }),
      200,
    );
    must(
      await alice.api("PATCH", `/api/v1/connectors/${tooled}`, {
        body: { tool_policy: { pin: "record" }, rate_limits: { requests_per_minute: 6000, tools: { search: 600 } } },
      }),
      200,
    );
    must(
      await t.api("PATCH", `/api/v1/users/${alice.principal.id}`, { body: { rate_limits: { requests_per_minute: 6000 } } }),
      200,
    );
    // A shared token bucket's row: on SQLite the service keeps its buckets in memory, so the row is written as a
    // replica on PostgreSQL would write it (rate-limits/repository.ts).
    await createBucketRepository(store).reserve(`c:${tooled}`, 12, t.clock.now(), 600);
    // A 2025 client's session of a 2026-07-28-only server, as the proxy keeps it for every replica
    // (era-bridge/legacy-sessions.ts; the connector here speaks 2025, so the row is written as the proxy writes it).
    await createLegacySessionStore(store).insert(
      {
        id: "legacy-session-1",
        connectorId: tooled,
        userId: alice.principal.id,
        owner: "owner-digest",
        init: {
          clientInfo: { name: "every-table", version: "1" },
          capabilities: {},
          protocolVersion: "2025-11-25",
          policy: true,
        },
      },
      t.clock.now(),
    );
    // A parked call's retry handed from one replica to another, answered (era-bridge/handoffs.ts): on SQLite the service
    // never hands one over, so the row is written as replicas on PostgreSQL would write it, its retry and answer sealed.
    const handoffs = createHandoffStore(store, createSealer(key));
    await handoffs.insert("handoff-1", "replica-a/connectors", "[]", '{"jsonrpc":"2.0","id":2}', t.clock.now());
    await handoffs.take("replica-a/connectors", t.clock.now());
    await handoffs.answer("handoff-1", '{"jsonrpc":"2.0","id":2,"result":{}}');
    // A virtual server with the connector and a server with sessions as its members, and a client session of it that
    // called the latter (an upstream session held, its id sealed).
    const sessioned = must(
      await alice.api("POST", "/api/v1/connectors", { body: { url: "https://sessions.example/mcp", metadata: { name: "S" } } }),
      201,
    ).body.id;
    must(await alice.api("POST", `/api/v1/connectors/${sessioned}/connect`, { body: {} }), 200);
    const virtualServer = must(
      await alice.api("POST", "/api/v1/virtual-servers", {
        body: { name: "Everything", members: [{ connector_id: tooled }, { connector_id: sessioned, prefix: "s" }] },
      }),
      201,
    ).body as { mcp_url: string };
    const mcp = new Client({ name: "every-table", version: "1.0.0" });
    const fetchAs = (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      request.headers.set("authorization", `Bearer ${alice.token}`);
      return t.handle(request);
    };
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${t.publicUrl}/api/v1/connectors/${tooled}/mcp`), { fetch: fetchAs }),
    );
    await mcp.listTools();
    tools.descriptions.fetch = "Changed since it was pinned";
    await mcp.listTools();
    await mcp.callTool({ name: "search", arguments: { query: "captured argument" } });
    await mcp.close();
    const virtualClient = new Client({ name: "every-table", version: "1.0.0" });
    await virtualClient.connect(new StreamableHTTPClientTransport(new URL(virtualServer.mcp_url), { fetch: fetchAs }));
    await virtualClient.callTool({ name: "s__hello", arguments: {} });

    // OAuth: one connector connected (a registered client, a grant), one waiting for the person.
    const connectOAuth = async () => {
      const id = must(await alice.api("POST", "/api/v1/connectors", { body: { url: oauth.resource } }), 201).body.id;
      const connect = must(await alice.api("POST", `/api/v1/connectors/${id}/connect`), 200);
      return connect.body.auth_request.authorization_url as string;
    };
    const landed = await finishCallback(t, oauth.approve(await connectOAuth()), alice.basic);
    if (landed.status !== 200) throw new Error(`OAuth callback: ${landed.status} ${landed.text}`);
    await connectOAuth();

    must(
      await t.api("POST", "/api/v1/providers", {
        body: {
          agent_card: {
            name: "Agent",
            description: "d",
            url: "https://agent.example/a2a",
            version: "1",
            capabilities: {},
            defaultInputModes: ["text/plain"],
            defaultOutputModes: ["text/plain"],
            skills: [],
          },
        },
      }),
      201,
    );

    // An MCP client of the service's own authorization server: registered, granted, with tokens; and a second request waiting.
    const as = byHand(t.handle, t.publicUrl);
    const client_id = await as.register();
    const resource = `${t.publicUrl}/api/v1/connectors/${tooled}/mcp`;
    const { verifier, challenge } = pkce();
    const { location } = await approveInForms(t.handle, as.authorizeUrl({ client_id, challenge, resource }), alice.basic);
    const tokens = await as.exchange({ client_id, verifier, code: new URL(location).searchParams.get("code")! }, resource);
    if (tokens.status !== 200) throw new Error(`token: ${tokens.status} ${await tokens.text()}`);
    // And a grant for the virtual server's MCP URL (virtual_server_id set, connector_id null).
    const again = pkce();
    const toVirtual = await approveInForms(
      t.handle,
      as.authorizeUrl({ client_id, challenge: again.challenge, resource: virtualServer.mcp_url }),
      alice.basic,
    );
    const code = new URL(toVirtual.location).searchParams.get("code")!;
    const virtualTokens = await as.exchange({ client_id, verifier: again.verifier, code }, virtualServer.mcp_url);
    if (virtualTokens.status !== 200) throw new Error(`token: ${virtualTokens.status} ${await virtualTokens.text()}`);
    // A request is stored once the person signed in (the consent page waits for the answer).
    const waiting = as.authorizeUrl({ client_id, challenge: pkce().challenge, resource });
    const signedIn = new URLSearchParams({ step: "sign-in", username: alice.basic.username, password: alice.basic.password });
    must(
      await readResponse(
        await t.handle(
          new Request(waiting, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: signedIn.toString(),
          }),
        ),
      ),
      200,
    );

    await t.runJobs();
    await t.services.audit.flush();
    await waitFor("the webhook's cursor", async () => (await count(store, "webhook_cursors")) > 0);
  } finally {
    t.services.events.webhooks?.stop();
    await t.close();
  }
}

/** Every row of a listed table, in the order of its key (compared as JSON, the same on both stores). */
export async function readTable(store: Store, entry: StoredTable): Promise<Row[]> {
  const rows: Row[] = await store.db.select().from(store.table(entry.sqlite, entry.postgres) as never);
  const keyOf = (row: Row) => JSON.stringify(entry.key.map((field) => row[field]));
  return rows.sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
}

/** Rows of the listed table named `name`. */
export async function count(store: Store, name: string): Promise<number> {
  const entry = TABLES.find((e) => e.name === name)!;
  return (await readTable(store, entry)).length;
}

function must<T extends { status: number; text: string }>(res: T, status: number): T {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return res;
}
