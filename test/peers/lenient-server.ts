import { resolve } from "node:path";
import { freePort, spawnPeer, type Peer } from "./ports";

/** lenient-server.py: an MCP server whose JSON parser (Python's json) takes NaN and UTF-16; `calls()` lists its tool calls. */
export async function startLenientServer(): Promise<Peer & { calls(): Promise<string[]> }> {
  const port = await freePort();
  const peer = await spawnPeer(
    ["python3", resolve(import.meta.dir, "lenient-server.py"), String(port)],
    {},
    `http://127.0.0.1:${port}/calls`,
    port,
  );
  return {
    ...peer,
    url: `http://127.0.0.1:${port}/mcp`,
    calls: async () => (await fetch(`http://127.0.0.1:${port}/calls`)).json() as Promise<string[]>,
  };
}
