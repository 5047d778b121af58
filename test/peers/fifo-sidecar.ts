import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { EVERYTHING } from "./everything";
import { freePort, waitForHttp } from "./ports";
import { waitFor } from "../support/wait";

export type FifoSidecar = { url: string; port: number; server: Bun.Subprocess; gateway: Bun.Subprocess; stop(): Promise<void> };

/** `connector-service gateway` (this checkout's entry point), run as a subprocess with `args` on 127.0.0.1. */
export const spawnGateway = (args: string[], env: Record<string, string> = {}, stderr: "ignore" | "pipe" = "ignore") =>
  Bun.spawn([process.execPath, resolve(import.meta.dir, "../../src/index.ts"), "gateway", "--host", "127.0.0.1", ...args], {
    env: { ...process.env, ...env },
    stdout: "ignore",
    stderr,
  });

/**
 * The Kubernetes pod's wiring, on loopback: server-everything runs `<command> < in > out` over two named pipes, and the
 * gateway subcommand serves them (`--fifo`), with `env` added to its environment. Ready once /healthz answers 200
 * (the server answered the gateway's initialize).
 */
export async function startFifoSidecar(env: Record<string, string> = {}): Promise<FifoSidecar> {
  const dir = mkdtempSync(join(tmpdir(), "cs-fifo-"));
  const server = Bun.spawn(
    ["sh", "-c", `mkfifo "$0/in" "$0/out" && exec node "$1" stdio < "$0/in" > "$0/out"`, dir, EVERYTHING],
    { stdout: "ignore", stderr: "ignore" },
  );
  const port = await freePort();
  const gateway = spawnGateway(["--port", String(port), "--fifo", dir], env);
  const stop = async () => {
    gateway.kill("SIGTERM");
    server.kill("SIGTERM");
    await Promise.all([gateway.exited, server.exited]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForHttp(`http://127.0.0.1:${port}/healthz`);
    await waitFor("the sidecar to be ready", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 10_000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: `http://127.0.0.1:${port}/mcp`, port, server, gateway, stop };
}
