import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ACCESS_TOKEN_TTL_MS } from "../../src/oauth-server/model";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { approveInForms, memoryOAuthProvider } from "../support/oauth-client";
import { queryRows } from "../support/store";
import { sql } from "drizzle-orm";

// An MCP client that knows nothing but a proxy URL, through app.handle: the official SDK client with an
// OAuthClientProvider discovers the service as the authorization server, registers (or is known by its metadata
// document), sends the person through sign-in and consent (submitted as a browser would), and calls tools.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let connectorId: string;
let proxy: string;
const CLIENT_DOCUMENT = "https://client.example/mcp-client.json";
const registrations = async () =>
  Number((await queryRows<{ n: number }>(t.deps, sql`SELECT count(*) AS n FROM as_clients WHERE kind = 'registered'`))[0]!.n);
const fetchFn = (input: string | URL | Request, init?: RequestInit) => t.handle(new Request(input, init));

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", scriptedServer().handler);
  t.network.serve("https://client.example", () =>
    Response.json({
      client_id: CLIENT_DOCUMENT,
      client_name: "A client with a metadata document",
      redirect_uris: ["http://127.0.0.1:33418/callback"],
      token_endpoint_auth_method: "none",
    }),
  );
  alice = await t.user("alice");
  connectorId = await connectedConnector(alice.api, "https://mcp.example/mcp");
  proxy = `${t.publicUrl}/api/v1/connectors/${connectorId}/mcp`;
});
afterAll(() => t.close());

/** The pages the person saw on the last sign-in (sign-in, consent). */
let seen: string[] = [];

/** Connects the SDK client with `provider`; the first time, it goes through the person's sign-in and consent. */
async function connect(provider: ReturnType<typeof memoryOAuthProvider>) {
  const open = async () => {
    const client = new Client({ name: "oauth-test-client", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy), { authProvider: provider, fetch: fetchFn }));
    return client;
  };
  try {
    return await open();
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const { location, pages } = await approveInForms(t.handle, provider.saved.authorizationUrl!, alice.basic);
  seen = pages;
  const back = new URL(location);
  expect(back.searchParams.get("iss")).toBe(t.publicUrl);
  const transport = new StreamableHTTPClientTransport(new URL(proxy), { authProvider: provider, fetch: fetchFn });
  await transport.finishAuth(back.searchParams.get("code")!);
  return open();
}

describe("an MCP client given only the proxy URL", () => {
  test("registers (RFC 7591), signs the person in, reaches the server; refreshes when the token expires; stops when the grant is revoked", async () => {
    const provider = memoryOAuthProvider();
    const client = await connect(provider);
    expect(await client.ping()).toEqual({});
    const registered = provider.saved.client!;
    expect(registered.client_id).not.toBe(CLIENT_DOCUMENT);
    // The consent page names the client, says it is unverified (it named itself), where the answer goes, and what it will reach.
    expect(seen[1]).toContain("Test MCP client");
    expect(seen[1]).toContain("Unverified");
    expect(seen[1]).toContain("127.0.0.1:33418");
    expect(seen[1]).toContain("https://mcp.example/mcp");
    expect(provider.saved.tokens!.access_token).toStartWith("csa_");
    // The SDK asks for the scopes the resource metadata lists (MCP scope selection), and is granted just that.
    expect(provider.saved.authorizationUrl!.searchParams.get("scope")).toBe("mcp");
    expect(provider.saved.tokens!.scope).toBe("mcp");

    // The grant, as the person sees it.
    const grants = (await alice.api("GET", "/api/v1/grants")).body.items;
    expect(grants).toHaveLength(1);
    expect(grants[0]).toMatchObject({ client_id: registered.client_id, connector_id: connectorId });

    // Past the access token's life: the client refreshes (the refresh token rotates) and goes on.
    const before = provider.saved.tokens!;
    t.clock.advance(ACCESS_TOKEN_TTL_MS + 1_000);
    expect(await client.ping()).toEqual({});
    expect(provider.saved.tokens!.access_token).not.toBe(before.access_token);
    expect(provider.saved.tokens!.refresh_token).not.toBe(before.refresh_token);
    await client.close();

    // Revoked: the client's next request fails, at once.
    expect((await alice.api("DELETE", `/api/v1/grants/${grants[0].id}`)).status).toBe(204);
    const refused = await t.handle(
      new Request(proxy, {
        method: "POST",
        headers: {
          authorization: `Bearer ${provider.saved.tokens!.access_token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: "{}",
      }),
    );
    expect(refused.status).toBe(401);
    expect((await alice.api("GET", "/api/v1/grants")).body.items).toHaveLength(0);
  });

  test("with a Client ID Metadata Document: no registration, the document's URL is the client_id, its name is shown", async () => {
    const registrationsBefore = await registrations();
    const provider = memoryOAuthProvider({ clientMetadataUrl: CLIENT_DOCUMENT });
    const fetchedBefore = t.network.requests.filter((r) => r.url === CLIENT_DOCUMENT).length;
    const client = await connect(provider);
    expect(provider.saved.client!.client_id).toBe(CLIENT_DOCUMENT);
    expect(t.network.requests.filter((r) => r.url === CLIENT_DOCUMENT).length).toBeGreaterThan(fetchedBefore);
    expect(await client.ping()).toEqual({});
    await client.close();
    expect(await registrations()).toBe(registrationsBefore);
    expect(seen[1]).toContain("A client with a metadata document");
    expect(seen[1]).toContain("Known by its metadata document at client.example");
    expect((await alice.api("GET", "/api/v1/grants")).body.items.map((g: { client_id: string }) => g.client_id)).toContain(
      CLIENT_DOCUMENT,
    );
  });
});

describe("the proxy URL as a protected resource", () => {
  test("a request without credentials is a 401 naming the resource metadata; the metadata names this service", async () => {
    const res = await t.handle(
      new Request(proxy, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
    );
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate")!;
    expect(challenge).toStartWith(
      `Bearer resource_metadata="${t.publicUrl}/.well-known/oauth-protected-resource/api/v1/connectors/${connectorId}/mcp"`,
    );
    expect(challenge).toContain("Basic");
    const metadata = await (
      await t.handle(new Request(`${t.publicUrl}/.well-known/oauth-protected-resource/api/v1/connectors/${connectorId}/mcp`))
    ).json();
    expect(metadata).toMatchObject({ resource: proxy, authorization_servers: [t.publicUrl] });
    const as = await (await t.handle(new Request(`${t.publicUrl}/.well-known/oauth-authorization-server`))).json();
    expect(as).toMatchObject({
      issuer: t.publicUrl,
      code_challenge_methods_supported: ["S256"],
      client_id_metadata_document_supported: true,
    });
    // Whatever the path holds, the challenge is a valid header (the id is percent-encoded in it).
    const odd = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${encodeURIComponent("よ👣")}/mcp`, { method: "POST", body: "{}" }),
    );
    expect(odd.status).toBe(401);
    expect(odd.headers.get("www-authenticate")).toContain("/api/v1/connectors/%E3%82%88%F0%9F%91%A3/mcp");
    // Basic and API tokens keep working as before.
    expect(
      (
        await t.handle(
          new Request(proxy, {
            method: "POST",
            headers: {
              authorization: `Bearer ${alice.token}`,
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
            },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
          }),
        )
      ).status,
    ).toBe(200);
  });
});
