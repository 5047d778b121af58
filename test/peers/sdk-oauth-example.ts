import { resolve } from "node:path";
import type { Peer } from "./everything";
import { freePort, waitForHttp } from "./ports";

const EXAMPLE = resolve(import.meta.dir, "../../node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js");

/**
 * The MCP SDK's own OAuth-protected example server (`--oauth --oauth-strict`): RFC 9728 metadata, DCR, S256,
 * an authorization endpoint that approves at once, tokens accepted only for this server. Run by Node.
 * Its URLs say `localhost`.
 */
export async function startSdkOAuthExample(): Promise<Peer & { authUrl: string }> {
  const [mcpPort, authPort] = [await freePort(), await freePort()];
  const proc = Bun.spawn(["node", EXAMPLE, "--oauth", "--oauth-strict"], {
    env: { ...process.env, MCP_PORT: String(mcpPort), MCP_AUTH_PORT: String(authPort) },
    stdout: "ignore",
    stderr: "ignore",
  });
  const url = `http://localhost:${mcpPort}/mcp`;
  await waitForHttp(url);
  await waitForHttp(`http://localhost:${authPort}/.well-known/oauth-authorization-server`);
  return {
    url,
    port: mcpPort,
    authUrl: `http://localhost:${authPort}`,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
