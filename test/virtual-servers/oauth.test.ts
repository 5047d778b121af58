import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ACCESS_TOKEN_TTL_MS } from "../../src/oauth-server/model";
import { startLabelledServer } from "../peers/labelled-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce } from "../support/oauth-by-hand";
import { approveInForms, memoryOAuthProvider } from "../support/oauth-client";

// OAuth by URL alone at a virtual server's MCP URL (docs/interface.md §9.4): an MCP client that knows nothing but
// that URL finds this service as its authorization server (RFC 9728), and the token it gets (RFC 8707 resource) is
// good there only — not at a member's proxy URL, another virtual server, anyone else's, or the REST API.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;
let oauth: ReturnType<typeof byHand>;
const one = await startLabelledServer("one");
const two = await startLabelledServer("two");
let idOne: string;
let idTwo: string;
/** Alice's virtual server over both her connectors, another of hers over one, and Bob's. */
let server: { id: string; mcp_url: string };
let otherOfAlice: { id: string; mcp_url: string };
let serverOfBob: { id: string; mcp_url: string };
const proxyUrl = (id: string) => `${t.publicUrl}/api/v1/connectors/${id}/mcp`;
const metadataUrl = (id: string) => `${t.publicUrl}/.well-known/oauth-protected-resource/api/v1/virtual-servers/${id}/mcp`;

beforeAll(async () => {
  t = await createTestApp({ realNetwork: true });
  alice = await t.user("alice");
  bob = await t.user("bob");
  oauth = byHand(t.handle, t.publicUrl);
  idOne = await connectedConnector(alice.api, one.url);
  idTwo = await connectedConnector(alice.api, two.url);
  const create = async (as: typeof alice, name: string, members: { connector_id: string; prefix: string }[]) => {
    const res = await as.api("POST", "/api/v1/virtual-servers", { body: { name, members } });
    expect(res.status).toBe(201);
    return res.body as { id: string; mcp_url: string };
  };
  server = await create(alice, "Alice's tools", [
    { connector_id: idOne, prefix: "one" },
    { connector_id: idTwo, prefix: "two" },
  ]);
  otherOfAlice = await create(alice, "Alice's other", [{ connector_id: idOne, prefix: "only" }]);
  serverOfBob = await create(bob, "Bob's", [{ connector_id: await connectedConnector(bob.api, one.url), prefix: "bob" }]);
});
afterAll(async () => {
  await t.close();
  await one.stop();
  await two.stop();
});

const LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "by-hand", version: "1" } },
});

/** A POST of `body` at an MCP URL with a bearer token (or none), in a session or not: the response. */
const post = (url: string, token: string | undefined, body = INITIALIZE, session?: string) =>
  t.handle(
    new Request(url, {
      method: "POST",
      headers: {
        ...(token && { authorization: `Bearer ${token}` }),
        ...(session && { "mcp-session-id": session }),
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body,
    }),
  );

/** `who` authorizes a fresh client for `resource` by hand (registration, PKCE, sign-in, consent): where they were sent back. */
async function authorize(resource: string, who: { username: string; password: string } = alice.basic) {
  const client_id = await oauth.register();
  const { verifier, challenge } = pkce();
  const { location, pages } = await approveInForms(t.handle, oauth.authorizeUrl({ client_id, challenge, resource }), who);
  return { client_id, verifier, back: new URL(location), consent: pages[1]! };
}

/** The tokens for `resource` that a client gets when `who` allows it. */
async function tokensFor(resource: string, who?: { username: string; password: string }) {
  const { client_id, verifier, back } = await authorize(resource, who);
  const code = back.searchParams.get("code");
  if (!code) throw new Error(`no code: ${back.href}`);
  const res = await oauth.exchange({ client_id, verifier, code }, resource);
  expect(res.status).toBe(200);
  return { client_id, ...((await res.json()) as { access_token: string; refresh_token: string }) };
}

describe("a virtual server's MCP URL as a protected resource (RFC 9728)", () => {
  test("a request without credentials is a 401 whose challenge names the metadata, which names this service; Basic for programs only", async () => {
    const res = await post(server.mcp_url, undefined);
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate")!;
    expect(challenge).toStartWith(`Bearer resource_metadata="${metadataUrl(server.id)}"`);
    expect(challenge).toContain('realm="connector-service"');
    expect(challenge).toContain("Basic");
    const fromBrowser = await t.handle(
      new Request(server.mcp_url, { method: "POST", body: "{}", headers: { "sec-fetch-mode": "cors", origin: t.publicUrl } }),
    );
    expect(fromBrowser.status).toBe(401);
    expect(fromBrowser.headers.get("www-authenticate")).toStartWith(`Bearer resource_metadata="${metadataUrl(server.id)}"`);
    expect(fromBrowser.headers.get("www-authenticate")).not.toContain("Basic");

    const metadata = await t.handle(new Request(metadataUrl(server.id)));
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({
      resource: server.mcp_url,
      authorization_servers: [t.publicUrl],
      bearer_methods_supported: ["header"],
      scopes_supported: ["mcp"],
    });
  });

  test("an id that is no virtual server, or not the asker's: the same document as for any other (nothing said of what exists)", async () => {
    const unknown = await t.handle(new Request(metadataUrl("no-such-server")));
    expect(unknown.status).toBe(200);
    const known = await (await t.handle(new Request(metadataUrl(serverOfBob.id)))).json();
    const stranger = await unknown.json();
    expect(stranger).toEqual({ ...known, resource: `${t.publicUrl}/api/v1/virtual-servers/no-such-server/mcp` });
    // And the 401 at the URL itself is the same with or without such a server.
    const at = await post(`${t.publicUrl}/api/v1/virtual-servers/no-such-server/mcp`, undefined);
    expect(at.status).toBe(401);
    expect(at.headers.get("www-authenticate")).toStartWith(`Bearer resource_metadata="${metadataUrl("no-such-server")}"`);
  });

  test("browser-based clients may read the metadata across origins", async () => {
    const preflight = await t.handle(
      new Request(metadataUrl(server.id), {
        method: "OPTIONS",
        headers: { origin: "https://app.example", "access-control-request-method": "GET" },
      }),
    );
    expect(preflight.status).toBe(204);
  });
});

describe("an MCP client given only the virtual server's URL", () => {
  test("discovers, registers (RFC 7591), gets the person's consent naming the virtual server, lists and calls the members' tools; refreshes", async () => {
    const provider = memoryOAuthProvider();
    const open = async () => {
      const client = new Client({ name: "oauth-virtual-client", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(server.mcp_url), { authProvider: provider, fetch: t.fetch }),
      );
      return client;
    };
    await expect(open()).rejects.toBeInstanceOf(UnauthorizedError);
    const asked = provider.saved.authorizationUrl!;
    expect(asked.origin + asked.pathname).toBe(`${t.publicUrl}/oauth/authorize`);
    expect(asked.searchParams.get("resource")).toBe(server.mcp_url);
    expect(asked.searchParams.get("code_challenge_method")).toBe("S256");

    const { location, pages } = await approveInForms(t.handle, asked, alice.basic);
    expect(pages[1]).toContain("Allow access to an MCP virtual server?");
    expect(pages[1]).toContain("Alice&#39;s tools");
    expect(pages[1]).toContain(server.mcp_url);
    const back = new URL(location);
    expect(back.searchParams.get("iss")).toBe(t.publicUrl);
    await new StreamableHTTPClientTransport(new URL(server.mcp_url), { authProvider: provider, fetch: t.fetch }).finishAuth(
      back.searchParams.get("code")!,
    );
    expect(provider.saved.tokens!.access_token).toStartWith("csa_");

    const client = await open();
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["one__echo", "two__echo"]));
    const called = await client.callTool({ name: "two__echo", arguments: { message: "hi" } });
    expect((called.content as { text: string }[])[0]!.text).toBe("two: hi");

    // The grant, as the person sees it: for the virtual server, not a connector.
    const grants = (await alice.api("GET", "/api/v1/grants")).body.items as Record<string, unknown>[];
    expect(grants).toContainEqual(
      expect.objectContaining({ client_id: provider.saved.client!.client_id, connector_id: null, virtual_server_id: server.id }),
    );

    // Past the access token's life: the SDK refreshes (RFC 8707 resource: this URL again) and goes on.
    const before = provider.saved.tokens!;
    t.clock.advance(ACCESS_TOKEN_TTL_MS + 1_000);
    expect((await client.listTools()).tools.length).toBe(names.length);
    expect(provider.saved.tokens!.access_token).not.toBe(before.access_token);
    await client.close();
  });
});

describe("a token for one virtual server", () => {
  test("is good at it only: refused at its members' proxy URLs, another of the owner's virtual servers, another user's, and the API", async () => {
    const { access_token } = await tokensFor(server.mcp_url);
    expect((await post(server.mcp_url, access_token)).status).toBe(200);

    for (const elsewhere of [proxyUrl(idOne), proxyUrl(idTwo), otherOfAlice.mcp_url, serverOfBob.mcp_url]) {
      const res = await post(elsewhere, access_token);
      expect({ elsewhere, status: res.status }).toEqual({ elsewhere, status: 401 });
      expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
      expect((await res.json()).type).toBe("/problems/invalid-token");
    }
    for (const path of [
      "/api/v1/virtual-servers",
      `/api/v1/virtual-servers/${server.id}`,
      "/api/v1/connectors",
      "/api/v1/grants",
    ]) {
      const res = await t.handle(new Request(`${t.publicUrl}${path}`, { headers: { authorization: `Bearer ${access_token}` } }));
      expect({ path, status: res.status }).toEqual({ path, status: 401 });
    }
  });

  test("a token for a connector is refused at a virtual server, even one the connector is a member of", async () => {
    const { access_token } = await tokensFor(proxyUrl(idOne));
    expect((await post(proxyUrl(idOne), access_token)).status).toBe(200);
    const res = await post(server.mcp_url, access_token);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  test("a session opened with the token goes on only with it (another virtual server's token cannot use it) and ends with it, its members' sessions too", async () => {
    const mine = await tokensFor(server.mcp_url);
    const other = await tokensFor(otherOfAlice.mcp_url);
    const opened = await post(server.mcp_url, mine.access_token);
    const session = opened.headers.get("mcp-session-id")!;
    expect(session).toBeTruthy();
    const withSession = (token: string, method = "POST") =>
      method === "POST"
        ? post(server.mcp_url, token, LIST, session)
        : t.handle(
            new Request(server.mcp_url, {
              method,
              headers: { authorization: `Bearer ${token}`, "mcp-session-id": session },
            }),
          );
    expect((await withSession(mine.access_token)).status).toBe(200);
    expect((await withSession(other.access_token)).status).toBe(401);
    expect((await withSession(other.access_token, "DELETE")).status).toBe(401);
    // DELETE ends the members' upstream sessions too: reached as the person, not refused as the token's binding.
    const ended = one.sessions.ended + two.sessions.ended;
    expect((await withSession(mine.access_token, "DELETE")).status).toBe(204);
    expect(one.sessions.ended + two.sessions.ended).toBe(ended + 2);
  });

  test("the token endpoint refuses a resource other than the granted one (RFC 8707 §2.2), for the code and for a refresh", async () => {
    const { client_id, verifier, back } = await authorize(server.mcp_url);
    const exchange = (resource: string) =>
      oauth.exchange({ client_id, verifier, code: back.searchParams.get("code")! }, resource);
    for (const resource of [otherOfAlice.mcp_url, proxyUrl(idOne)]) {
      const refused = await exchange(resource);
      expect({ resource, status: refused.status, error: (await refused.json()).error }).toEqual({
        resource,
        status: 400,
        error: "invalid_target",
      });
    }
    const tokens = await (await exchange(server.mcp_url)).json();
    const refresh = (resource: string) =>
      oauth.token({ grant_type: "refresh_token", client_id, refresh_token: tokens.refresh_token, resource });
    expect((await (await refresh(serverOfBob.mcp_url)).json()).error).toBe("invalid_target");
    expect((await refresh(server.mcp_url)).status).toBe(200);
  });

  test("deleting the virtual server ends its grants: the token stops at once", async () => {
    const res = await alice.api("POST", "/api/v1/virtual-servers", {
      body: { name: "Short-lived", members: [{ connector_id: idOne, prefix: "one" }] },
    });
    const doomed = res.body as { id: string; mcp_url: string };
    const { access_token } = await tokensFor(doomed.mcp_url);
    expect((await post(doomed.mcp_url, access_token)).status).toBe(200);
    expect((await alice.api("DELETE", `/api/v1/virtual-servers/${doomed.id}`)).status).toBe(204);
    t.clock.advance(2_000);
    expect((await post(doomed.mcp_url, access_token)).status).toBe(401);
    const grants = (await alice.api("GET", "/api/v1/grants")).body.items as { virtual_server_id: string | null }[];
    expect(grants.map((g) => g.virtual_server_id)).not.toContain(doomed.id);
  });
});

describe("who may allow it", () => {
  test("another user's virtual server: the consent page does not name it, and allowing gives invalid_target, no code", async () => {
    const { back, consent } = await authorize(server.mcp_url, bob.basic);
    expect(consent).not.toContain("Alice&#39;s tools");
    expect(consent).toContain("not yours");
    expect(back.searchParams.get("error")).toBe("invalid_target");
    expect(back.searchParams.get("code")).toBeNull();
  });

  test("no such virtual server: invalid_target, as for another's (nothing said of what exists)", async () => {
    const { back, consent } = await authorize(`${t.publicUrl}/api/v1/virtual-servers/no-such-server/mcp`);
    expect(consent).toContain("not yours");
    expect(back.searchParams.get("error")).toBe("invalid_target");
  });

  test("an administrator may, as they may reach any virtual server; the token acts as the administrator", async () => {
    const { access_token } = await tokensFor(server.mcp_url, t.admin.basic);
    const opened = await post(server.mcp_url, access_token);
    expect(opened.status).toBe(200);
    const list = await post(server.mcp_url, access_token, LIST, opened.headers.get("mcp-session-id")!);
    expect((await list.json()).result.tools.map((tool: { name: string }) => tool.name)).toContain("one__echo");
    // Still bound: not at the members' proxy URLs nor Bob's virtual server.
    expect((await post(proxyUrl(idOne), access_token)).status).toBe(401);
    expect((await post(serverOfBob.mcp_url, access_token)).status).toBe(401);
  });
});
