import { ConfigError, loadSetting } from "../config/load";
import { fifoTransport } from "../gateway/fifo";
import { createGateway, type Gateway } from "../gateway/gateway";
import { createSharedGateway } from "../gateway/shared";
import { createLogger } from "../observability/logger";

const USAGE =
  "usage: connector-service gateway [--port 8080] [--host 0.0.0.0] -- <command> [args...]\n" +
  "       connector-service gateway [--port 8080] [--host 0.0.0.0] --fifo <dir>   (the server's stdio as <dir>/in and <dir>/out)\n" +
  "PROXY__INPUT_TIMEOUT_SECONDS (1 to 3600, default 300): how long a 2026-07-28 client's call parked for input waits for its retry";

/** The environment variable that carries the deployment's token (gateway/token.ts); without it /mcp is open. */
export const GATEWAY_TOKEN_ENV = "GATEWAY__TOKEN";

/**
 * How long a 2026-07-28 client's parked call waits for its retry: the service's PROXY__INPUT_TIMEOUT_SECONDS, which the
 * Kubernetes driver gives the sidecar (runtime/kubernetes/manifests.ts), read and checked as the service reads it; or
 * why the value is refused.
 */
function inputTimeoutMs(env: Record<string, string | undefined>): number | ConfigError {
  try {
    return loadSetting(env, "proxy", "input_timeout_seconds") * 1000;
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
}

/**
 * `connector-service gateway`: serves a stdio MCP server over MCP Streamable HTTP on /mcp (and /healthz). With a
 * command after `--`, one server process per session; the command inherits the gateway's environment, but not its
 * token. With `--fifo <dir>` (the Kubernetes sidecar), the one server process of another container, whose stdio is
 * `<dir>/in` and `<dir>/out`, shared by every session.
 */
export async function gateway(argv: string[]): Promise<number> {
  let port = 8080;
  let host = "0.0.0.0";
  let fifo: string | undefined;
  let i = 0;
  for (; i < argv.length && argv[i] !== "--"; i++) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    if (flag === "--port" && value && /^\d+$/.test(value) && Number(value) < 65536) port = Number(value);
    else if (flag === "--host" && value) host = value;
    else if (flag === "--fifo" && value) fifo = value;
    else {
      process.stderr.write(`connector-service gateway: unknown or incomplete option "${flag}"\n${USAGE}\n`);
      return 2;
    }
    i++;
  }
  const [command, ...args] = argv.slice(i + 1);
  if (!command === !fifo) {
    process.stderr.write(`connector-service gateway: give either a command after -- or --fifo <dir>\n${USAGE}\n`);
    return 2;
  }
  const timeoutMs = inputTimeoutMs(process.env);
  if (timeoutMs instanceof ConfigError) {
    process.stderr.write(`connector-service gateway: ${timeoutMs.message}\n`);
    return 2;
  }
  const log = createLogger({ level: "info" }, { component: "gateway" });
  const token = process.env[GATEWAY_TOKEN_ENV] || undefined;
  let gw: Gateway;
  let done: Promise<string> | undefined;
  if (fifo) {
    // One server process in another container, shared by every session; when it goes, so does the gateway
    // (Kubernetes restarts it and it starts over with the restarted server).
    const shared = createSharedGateway({
      server: fifoTransport(fifo),
      log,
      token,
      // The server may ask during a call (MCP 2025-11-25 client/elicitation, client/sampling): a 2026-07-28 client,
      // which has no server→client requests, is asked through a parked call (MCP 2026-07-28 multi-round-trip
      // requests) when its call is the only request in flight on the process — 2025 sessions' included, so a
      // question during theirs, or with several in flight, is refused to the server (shared.ts soleCall). Not roots,
      // which servers ask for once initialized, outside any call (gateway.ts, startModern).
      offer: { elicitation: {}, sampling: {} },
      parkCalls: { timeoutMs, soleCall: true },
    });
    done = Promise.race([
      shared.ready().then(
        () => new Promise<string>(() => {}),
        (e) => `the MCP server failed: ${(e as Error).message}`,
      ),
      shared.ended().then(() => "the MCP server's stdio closed"),
    ]);
    gw = shared;
  } else {
    const env = Object.fromEntries(
      Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && e[0] !== GATEWAY_TOKEN_ENV),
    );
    gw = createGateway({ stdio: { command: command!, args, env }, log, token, inputTimeoutMs: timeoutMs });
  }
  const server = Bun.serve({ hostname: host, port, idleTimeout: 0, fetch: gw.fetch });
  log.info("gateway listening", {
    url: `http://${host}:${server.port}/mcp`,
    token_required: token !== undefined,
    ...(fifo ? { fifo } : { command }),
  });
  const signal = await Promise.race([
    new Promise<string>((resolve) => {
      process.once("SIGTERM", () => resolve("SIGTERM"));
      process.once("SIGINT", () => resolve("SIGINT"));
    }),
    ...(done ? [done] : []),
  ]);
  log.info("gateway stopping", { reason: signal });
  await server.stop();
  await gw.close();
  return signal.startsWith("SIG") ? 0 : 1;
}
