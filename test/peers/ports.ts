import { createServer } from "node:net";

/** A port free on 127.0.0.1 right now (for peers that take a port, not 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Waits until `url` answers anything at all (any status), or throws after `timeoutMs`. */
export async function waitForHttp(url: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      if (Date.now() > until) throw new Error(`${url} did not come up in ${timeoutMs} ms`);
      await Bun.sleep(50);
    }
  }
}

export type Peer = { url: string; port: number; stop(): Promise<void> };

/** Spawns a peer process (its output discarded), waits until `url` answers, and stops it with SIGTERM. */
export async function spawnPeer(command: string[], env: Record<string, string>, url: string, port: number): Promise<Peer> {
  const proc = Bun.spawn(command, { env: { ...process.env, ...env }, stdout: "ignore", stderr: "ignore" });
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
