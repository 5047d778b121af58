import { resolve } from "node:path";
import { freePort, spawnPeer, waitForHttp, type Peer } from "./ports";

const EXAMPLE = resolve(
  import.meta.dir,
  "../../node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
);

/**
 * The MCP SDK's own OAuth-protected example server (`--oauth --oauth-strict`): RFC 9728 metadata, DCR, S256,
 * an authorization endpoint that approves at once, tokens accepted only for this server. Run by Node.
 * Its URLs say `localhost`.
 */
export async function startSdkOAuthExample(): Promise<Peer & { authUrl: string }> {
  const [mcpPort, authPort] = [await freePort(), await freePort()];
  const peer = await spawnPeer(
    ["node", EXAMPLE, "--oauth", "--oauth-strict"],
    { MCP_PORT: String(mcpPort), MCP_AUTH_PORT: String(authPort) },
    `http://localhost:${mcpPort}/mcp`,
    mcpPort,
  );
  await waitForHttp(`http://localhost:${authPort}/.well-known/oauth-authorization-server`);
  return { ...peer, authUrl: `http://localhost:${authPort}` };
}
