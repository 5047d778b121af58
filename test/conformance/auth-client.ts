/**
 * A client command for `@modelcontextprotocol/conformance client --suite auth`: the conformance kit runs it
 * with the URL of its scenario's MCP server. It drives connector-service (at CS_URL, as CS_AUTHORIZATION)
 * the way a user does: create a connector, connect, open the authorization URL (the kit's authorization
 * server approves at once), land on the callback, then call tools through the proxy.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { finishCallback } from "../support/callback";

const serverUrl = process.argv[2]!;
const service = process.env.CS_URL!;
/** The service's SERVER__PUBLIC_URL when it differs from CS_URL (as behind a TLS-terminating proxy). */
const publicUrl = process.env.CS_PUBLIC_URL ?? service;
const authorization = process.env.CS_AUTHORIZATION!;
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}") as { client_id?: string; client_secret?: string };
/** The user of CS_AUTHORIZATION (Basic), who finishes the authorization on the callback's confirmation page. */
const credentials = Buffer.from(authorization.replace(/^Basic /, ""), "base64").toString();
const person = {
  username: credentials.slice(0, credentials.indexOf(":")),
  password: credentials.slice(credentials.indexOf(":") + 1),
};

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${service}${path}`, {
    method,
    headers: { authorization, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

/** Follows the authorization server's redirects (it approves at once) to the service's callback. */
async function approve(authorizationUrl: string): Promise<void> {
  let next = authorizationUrl;
  for (let hop = 0; hop < 10 && !next.startsWith(publicUrl); hop++) {
    const res = await fetch(next, { redirect: "manual" });
    const location = res.headers.get("location");
    if (!location) throw new Error(`authorization stopped at ${next}: ${res.status} ${await res.text()}`);
    next = new URL(location, next).href;
  }
  // What the TLS-terminating proxy in front of the service would do: public URL → the service.
  const landed = await finishCallback(
    (request) => fetch(new Request(service + request.url.slice(publicUrl.length), request)),
    next,
    person,
  );
  if (landed.status !== 200) throw new Error(`callback failed: ${landed.status} ${landed.text}`);
}

async function connected(id: string) {
  const res = await api("GET", `/api/v1/connectors/${id}`);
  if (res.body.state !== "connected") throw new Error(`not connected: ${res.text}`);
}

async function main() {
  const created = await api("POST", "/api/v1/connectors", {
    url: serverUrl,
    match_preset: false,
    ...(context.client_id && { client_id: context.client_id }),
    ...(context.client_secret && { client_secret: context.client_secret }),
  });
  if (created.status !== 201) throw new Error(`create: ${created.text}`);
  const id = created.body.id as string;
  const connect = await api("POST", `/api/v1/connectors/${id}/connect`, {});
  if (connect.status !== 200) throw new Error(`connect: ${connect.text}`);
  if (connect.body.state === "auth_required") await approve(connect.body.auth_request.authorization_url);
  await connected(id);

  const callTools = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${service}/api/v1/connectors/${id}/mcp`), {
      requestInit: { headers: { authorization } },
    });
    const client = new Client({ name: "conformance-auth-client", version: "1.0.0" });
    await client.connect(transport);
    const { tools } = await client.listTools();
    for (const tool of tools) await client.callTool({ name: tool.name, arguments: {} });
    await client.close();
  };
  // A step-up (403 insufficient_scope) leaves the connector waiting for a wider grant: approve it, try again.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await callTools();
      return;
    } catch (e) {
      const now = await api("GET", `/api/v1/connectors/${id}`);
      if (now.body.state !== "auth_required") throw e;
      await approve(now.body.auth_request.authorization_url);
      await connected(id);
    }
  }
  throw new Error("tools still refused after re-authorization");
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(String(e instanceof Error ? e.stack : e));
    process.exit(1);
  },
);
