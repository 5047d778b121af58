import { resolve } from "node:path";
import { EVERYTHING, type Peer } from "./everything";
import { freePort, waitForHttp } from "./ports";

const MCP_PROXY = resolve(import.meta.dir, "../../node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs");

/**
 * `mcp-proxy` (npm) wrapping server-everything's stdio mode: serves both MCP eras on /mcp, the
 * 2026-07-28 one (no session; MCP-Protocol-Version, Mcp-Method, Mcp-Name) included. Never with --tunnel.
 */
export async function startModernServer(): Promise<Peer> {
  const port = await freePort();
  const proc = Bun.spawn(
    ["node", MCP_PROXY, "--port", String(port), "--host", "127.0.0.1", "--server", "stream", "--", "node", EVERYTHING, "stdio"],
    { stdout: "ignore", stderr: "ignore" },
  );
  const url = `http://127.0.0.1:${port}/mcp`;
  await waitForHttp(url);
  return {
    url,
    port,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
