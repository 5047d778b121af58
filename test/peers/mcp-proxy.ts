import { resolve } from "node:path";
import { EVERYTHING } from "./everything";
import { freePort, spawnPeer, type Peer } from "./ports";

const MCP_PROXY = resolve(import.meta.dir, "../../node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs");

/**
 * `mcp-proxy` (npm) wrapping server-everything's stdio mode: serves both MCP eras on /mcp, the
 * 2026-07-28 one (no session; MCP-Protocol-Version, Mcp-Method, Mcp-Name) included. Never with --tunnel.
 */
export async function startModernServer(): Promise<Peer> {
  const port = await freePort();
  const command = [
    "node",
    MCP_PROXY,
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--server",
    "stream",
    "--",
    "node",
    EVERYTHING,
    "stdio",
  ];
  return spawnPeer(command, {}, `http://127.0.0.1:${port}/mcp`, port);
}
