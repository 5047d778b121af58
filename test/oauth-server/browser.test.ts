import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type Browser } from "playwright-core";
import { launchChromium } from "../support/chromium";
import { startEverything, type Peer } from "../peers/everything";
import type { Api } from "../support/api";
import { framedUrl, signInToConsole, watchPolicy } from "../support/browser";
import { connectedConnector, proxyUrl, toolText } from "../support/mcp";
import { memoryOAuthProvider } from "../support/oauth-client";
import { startTestService, type TestService } from "../support/service";

// An MCP client that knows nothing but the proxy URL gets from zero to a tool result through the browser login:
// the real service over its socket, the real server-everything behind a connector, the official SDK client, and a
// person in headless Chromium who signs in on the service's page and answers its consent page; the answer comes back
// to the client's own loopback redirect URI. Also: Deny reaches the client as access_denied with no tokens, and a
// CORS preflight at the proxy URL is answered by Bun's native route.

let upstream: Peer;
let service: TestService;
let browser: Browser;
let callback: ReturnType<typeof startCallback>;
let alice: { username: string; password: string };
let asAlice: Api;
let connectorId: string;
let proxy: string;

/**
 * The MCP client's redirect URI: a local HTTP server, as a desktop client runs, that takes the answer from the
 * query and shows a "done" page. `next(state)` resolves with the query of the callback that carries that state.
 */
function startCallback() {
  const waiting = new Map<string, (query: URLSearchParams) => void>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      if (url.pathname !== "/callback") return new Response("not found", { status: 404 });
      waiting.get(url.searchParams.get("state") ?? "")?.(url.searchParams);
      return new Response("<!doctype html><title>Done</title><h1>Done</h1><p>You can go back to the application.</p>", {
        headers: { "content-type": "text/html; charset=utf-8" },
      });
    },
  });
  return {
    redirectUrl: `http://127.0.0.1:${server.port}/callback`,
    next: (state: string) => new Promise<URLSearchParams>((resolve) => waiting.set(state, resolve)),
    stop: () => server.stop(true),
  };
}

beforeAll(async () => {
  [upstream, service, browser] = await Promise.all([startEverything(), startTestService(), launchChromium()]);
  callback = startCallback();
  alice = (await service.user("alice")).basic;
  asAlice = (method, path, options = {}) => service.api(method, path, { as: alice, ...options });
  connectorId = await connectedConnector(asAlice, upstream.url);
  proxy = proxyUrl(service, connectorId);
});
afterAll(async () => {
  await browser?.close();
  callback?.stop();
  await service?.stop();
  await upstream?.stop();
});

/** An SDK client as an MCP host builds one: the MCP URL and an OAuth provider whose redirect URI is `callback`. */
function mcpClient(state: string, url = proxy) {
  const provider = memoryOAuthProvider({ redirectUrl: callback.redirectUrl, clientName: "Browser test client" });
  provider.state = () => state;
  // What a host does when the server refuses its tokens (invalid_grant) or its registration (invalid_client).
  provider.invalidateCredentials = (scope) => {
    if (scope === "all" || scope === "tokens") delete provider.saved.tokens;
    if (scope === "all" || scope === "client") delete provider.saved.client;
  };
  const transport = () => new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: "browser-test-client", version: "1.0.0" });
  return { provider, transport, client, url };
}

/** The SDK's first connect: it registers and asks for the person's browser (UnauthorizedError, the URL saved). */
async function firstConnect({ provider, transport, client, url }: ReturnType<typeof mcpClient>) {
  const error = await client.connect(transport()).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UnauthorizedError);
  expect(provider.saved.client?.client_id).toBeString();
  const authorizationUrl = provider.saved.authorizationUrl!;
  expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${service.url}/oauth/authorize`);
  expect(authorizationUrl.searchParams.get("resource")).toBe(url);
  return authorizationUrl;
}

/** A ping at the connector's proxy URL over the socket with a bearer token: the response. */
const pingWith = (token: string) =>
  fetch(proxy, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });

/** In the browser: the service's sign-in page, then its consent page (returned as text), answered with `button`. */
async function signInAndAnswer(authorizationUrl: URL, button: "Allow" | "Deny", heading = "Allow access to an MCP connector?") {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const refused = watchPolicy(page);
    await page.goto(authorizationUrl.href);
    expect(await page.getByRole("heading").textContent()).toBe("Sign in to connector-service");
    await page.getByLabel("User name").fill(alice.username);
    await page.getByLabel("Password").fill(alice.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: heading }).waitFor();
    const consent = (await page.locator("main").textContent()) ?? "";
    await page.getByRole("button", { name: button }).click();
    await page.waitForURL((url) => url.href.startsWith(callback.redirectUrl));
    expect(await page.getByRole("heading").textContent()).toBe("Done");
    // The pages' policy (style by hash, forms posted here and, from consent, to the client's origin) refused nothing.
    expect(refused).toEqual([]);
    return consent;
  } finally {
    await context.close();
  }
}

describe("an MCP client given only the proxy URL, with a person in a real browser", () => {
  test("registers, the person signs in and allows, the client gets tokens and calls a tool; revoking the grant stops it", async () => {
    const state = "state-allow";
    const mcp = mcpClient(state);
    const authorizationUrl = await firstConnect(mcp);

    const answer = callback.next(state);
    const consent = await signInAndAnswer(authorizationUrl, "Allow");
    // The consent page names the person, the client (unverified: it registered itself), where the answer goes, and the connector.
    expect(consent).toContain(`Signed in as ${alice.username}`);
    expect(consent).toContain("Browser test client");
    expect(consent).toContain("Unverified");
    expect(consent).toContain(new URL(callback.redirectUrl).host);
    expect(consent).toContain(upstream.url);

    const back = await answer;
    expect(back.get("state")).toBe(state);
    expect(back.get("iss")).toBe(service.url);
    expect(back.get("error")).toBeNull();
    await mcp.transport().finishAuth(back.get("code")!);
    expect(mcp.provider.saved.tokens!.access_token).toStartWith("csa_");

    await mcp.client.connect(mcp.transport());
    const tools = (await mcp.client.listTools()).tools.map((tool) => tool.name);
    expect(tools).toContain("echo");
    expect(toolText(await mcp.client.callTool({ name: "echo", arguments: { message: "hi" } }))).toBe("Echo: hi");

    // The person revokes the grant: the token is refused at once, and the client cannot go on.
    const grants = (await asAlice("GET", "/api/v1/grants")).body.items as {
      id: string;
      client_id: string;
      connector_id: string;
    }[];
    const grant = grants.find((g) => g.client_id === mcp.provider.saved.client!.client_id);
    expect(grant).toMatchObject({ connector_id: connectorId });
    expect((await asAlice("DELETE", `/api/v1/grants/${grant!.id}`)).status).toBe(204);
    const refused = await pingWith(mcp.provider.saved.tokens!.access_token);
    expect(refused.status).toBe(401);
    // Its refresh token is refused (invalid_grant): it drops its tokens and must send the person to sign in again.
    const askedBefore = mcp.provider.saved.authorizationUrl;
    await expect(mcp.client.callTool({ name: "echo", arguments: { message: "again" } })).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    expect(mcp.provider.saved.tokens).toBeUndefined();
    expect(mcp.provider.saved.authorizationUrl).not.toBe(askedBefore);
    await mcp.client.close();
  });

  test("the person denies: the client's redirect URI gets access_denied and the client has no tokens", async () => {
    const state = "state-deny";
    const mcp = mcpClient(state);
    const authorizationUrl = await firstConnect(mcp);

    const answer = callback.next(state);
    await signInAndAnswer(authorizationUrl, "Deny");
    const back = await answer;
    expect(back.get("error")).toBe("access_denied");
    expect(back.get("state")).toBe(state);
    expect(back.get("iss")).toBe(service.url);
    expect(back.get("code")).toBeNull();
    expect(mcp.provider.saved.tokens).toBeUndefined();
    const grants = (await asAlice("GET", "/api/v1/grants")).body.items as { client_id: string }[];
    expect(grants.map((g) => g.client_id)).not.toContain(mcp.provider.saved.client!.client_id);
    await mcp.client.close();
  });
});

describe("an MCP client given only a virtual server's URL, with a person in a real browser", () => {
  test("the person allows the virtual server by name; the client lists its members' tools and calls one; the token is good nowhere else", async () => {
    const created = await asAlice("POST", "/api/v1/virtual-servers", {
      body: { name: "Everything, virtually", members: [{ connector_id: connectorId, prefix: "all" }] },
    });
    expect(created.status).toBe(201);
    const server = created.body as { id: string; mcp_url: string };
    const state = "state-virtual";
    const mcp = mcpClient(state, server.mcp_url);
    const authorizationUrl = await firstConnect(mcp);

    const answer = callback.next(state);
    const consent = await signInAndAnswer(authorizationUrl, "Allow", "Allow access to an MCP virtual server?");
    expect(consent).toContain("Everything, virtually");
    expect(consent).toContain(server.mcp_url);
    const back = await answer;
    expect(back.get("iss")).toBe(service.url);
    await mcp.transport().finishAuth(back.get("code")!);

    await mcp.client.connect(mcp.transport());
    expect((await mcp.client.listTools()).tools.map((tool) => tool.name)).toContain("all__echo");
    expect(toolText(await mcp.client.callTool({ name: "all__echo", arguments: { message: "hi" } }))).toBe("Echo: hi");
    await mcp.client.close();

    // RFC 8707: bound to the virtual server; its member's own proxy URL refuses it.
    const atMember = await pingWith(mcp.provider.saved.tokens!.access_token);
    expect(atMember.status).toBe(401);
    expect(atMember.headers.get("www-authenticate")).toContain('error="invalid_token"');

    // The console's list of allowed clients names the grant by the virtual server's name.
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${service.url}/`);
      await signInToConsole(page, alice);
      await page.getByRole("link", { name: "API tokens" }).click();
      await page.locator("#grant-list li", { hasText: "Virtual server Everything, virtually" }).waitFor();
    } finally {
      await context.close();
    }
  });
});

test("another origin cannot frame the sign-in page (clickjacking the person into allowing)", async () => {
  const mcp = mcpClient("state-framed");
  const authorizationUrl = await firstConnect(mcp);
  expect(await framedUrl(browser, authorizationUrl.href)).not.toBe(authorizationUrl.href);
  await mcp.client.close();
});

test("a CORS preflight at the proxy URL over the socket (Bun's native route) is answered 204 without credentials", async () => {
  const res = await fetch(proxy, {
    method: "OPTIONS",
    headers: {
      origin: "https://app.example",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type, mcp-protocol-version",
    },
  });
  expect(res.status).toBe(204);
  expect(res.headers.get("access-control-allow-origin")).toBe("*");
  expect(res.headers.get("access-control-allow-methods")).toBe("POST, GET, DELETE");
  expect(res.headers.get("access-control-allow-headers")).toBe("authorization, content-type, mcp-protocol-version");
});
