import { resolve } from "node:path";
import { freePort, spawnPeer, type Peer } from "./ports";

export type { Peer };

const ROOT = resolve(import.meta.dir, "../..");
export const EVERYTHING = resolve(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

/**
 * @modelcontextprotocol/server-everything in streamableHttp mode, the reference MCP server, run by Node
 * as its authors do. It binds every interface; tests only ever reach it on 127.0.0.1.
 */
export async function startEverything(): Promise<Peer> {
  const port = await freePort();
  return spawnPeer(["node", EVERYTHING, "streamableHttp"], { PORT: String(port) }, `http://127.0.0.1:${port}/mcp`, port);
}
