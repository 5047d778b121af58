import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { authHeader, ADMIN, type Api, type Credentials, type TestService } from "./service";

export const proxyUrl = (service: TestService, id: string) => `${service.url}/api/v1/connectors/${id}/mcp`;

/** An MCP SDK client pointed at `url`, authenticating to the service as `as`. */
export async function mcpClient(url: string, as: Credentials | null = ADMIN) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: as ? { headers: { authorization: authHeader(as) } } : {},
  });
  const client = new Client({ name: "connector-service-tests", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, close: () => client.close() };
}

/** Creates a connector for `url` and connects it (headers optional); fails the test if that fails. */
export async function connectedConnector(api: Api, url: string, headers?: Record<string, string>): Promise<string> {
  const created = await api("POST", "/api/v1/connectors", { body: { url } });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${created.text}`);
  const connected = await api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: headers ? { headers } : {} });
  if (connected.status !== 200 || connected.body.state !== "connected") throw new Error(`connect: ${connected.status} ${connected.text}`);
  return created.body.id;
}
