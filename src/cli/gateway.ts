import { createGateway } from "../gateway/gateway";
import { createLogger } from "../observability/logger";

const USAGE = "usage: connector-service gateway [--port 8080] [--host 0.0.0.0] -- <command> [args...]";

/**
 * `connector-service gateway`: serves a stdio MCP server over MCP Streamable HTTP on /mcp (and /healthz),
 * one server process per session. The wrapped command inherits the gateway's environment.
 */
export async function gateway(argv: string[]): Promise<number> {
  let port = 8080;
  let host = "0.0.0.0";
  let i = 0;
  for (; i < argv.length && argv[i] !== "--"; i++) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    if (flag === "--port" && value && /^\d+$/.test(value) && Number(value) < 65536) port = Number(value);
    else if (flag === "--host" && value) host = value;
    else {
      process.stderr.write(`connector-service gateway: unknown or incomplete option "${flag}"\n${USAGE}\n`);
      return 2;
    }
    i++;
  }
  const [command, ...args] = argv.slice(i + 1);
  if (!command) {
    process.stderr.write(`connector-service gateway: no command to run\n${USAGE}\n`);
    return 2;
  }
  const log = createLogger({ level: "info" }, { component: "gateway" });
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
  const gw = createGateway({ stdio: { command, args, env }, log });
  const server = Bun.serve({ hostname: host, port, idleTimeout: 0, fetch: gw.fetch });
  log.info("gateway listening", { url: `http://${host}:${server.port}/mcp`, command });
  const signal = await new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  log.info("gateway stopping", { signal });
  await server.stop();
  await gw.close();
  return 0;
}
