import { resolve } from "node:path";
import { freePort, waitForHttp } from "./ports";

const ROOT = resolve(import.meta.dir, "../..");
export const EVERYTHING = resolve(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

export type Peer = { url: string; port: number; stop(): Promise<void> };

/**
 * @modelcontextprotocol/server-everything in streamableHttp mode, the reference MCP server, run by Node
 * as its authors do. It binds every interface; tests only ever reach it on 127.0.0.1.
 */
export async function startEverything(): Promise<Peer> {
  const port = await freePort();
  const proc = Bun.spawn(["node", EVERYTHING, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdout: "ignore",
    stderr: "ignore",
  });
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
