#!/usr/bin/env bun
import { ensureFetchLimit } from "./cli/fetch-limit";
import { VERSION } from "./version";

// Each command's modules are loaded when it runs, not before: `serve` re-executes itself first (ensureFetchLimit),
// and the first image then loads nothing it does not need (bench/RESULTS.md, "Start-up").

const USAGE = `connector-service ${VERSION}: stores, authorizes and proxies remote MCP servers.

Usage:
  connector-service [serve]          start the service (configuration from environment variables)
  connector-service migrate          apply database migrations and exit
  connector-service rotate-key       re-seal every stored secret under a new key (stop the service first)
  connector-service reset-admin-password
                                     give the administrator a new generated password, printed once, and end its
                                     console sessions (on the database the same settings name; stop the service first)
  connector-service copy --from A --to B
                                     copy every row between stores (a SQLite file or a postgres:// URL), secrets as sealed
  connector-service gateway [--port 8080] [--host 0.0.0.0] -- <command> [args...]
                                     serve a stdio MCP server over MCP Streamable HTTP on /mcp
  connector-service demo-server      run the demo MCP server on stdin/stdout (what the mcp+stdio://demo preset runs)
  connector-service healthcheck [URL] exit 0 when GET URL/healthz answers 200 (default: the configured host and port)
  connector-service version          print the version
  connector-service --help           show this help

Settings are environment variables such as SERVER__PORT and DATABASE__PATH; docs/configuration.md lists them all.
`;

async function main(argv: string[]): Promise<number> {
  const [command = "serve", ...rest] = argv;
  switch (command) {
    case "serve":
      if (rest.length) return unknown(rest[0]!);
      ensureFetchLimit();
      return (await import("./cli/serve")).serve(process.env);
    case "gateway":
      return (await import("./cli/gateway")).gateway(rest);
    case "migrate":
      return rest.length ? unknown(rest[0]!) : (await import("./cli/migrate")).migrate(process.env);
    case "copy":
      return (await import("./cli/copy")).copy(rest);
    case "rotate-key":
      return rest.length ? unknown(rest[0]!) : (await import("./cli/rotate-key")).rotateKey(process.env);
    case "reset-admin-password":
      return rest.length ? unknown(rest[0]!) : (await import("./cli/reset-admin-password")).resetAdminPassword(process.env);
    case "demo-server":
      return rest.length ? unknown(rest[0]!) : (await import("./cli/demo-server")).demoServer();
    case "healthcheck":
      return rest.length > 1 ? unknown(rest[1]!) : (await import("./cli/healthcheck")).healthcheck(process.env, rest[0]);
    case "version":
    case "--version":
    case "-v":
      process.stdout.write(`${VERSION}\n`);
      return 0;
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return 0;
    default:
      return unknown(command);
  }
}

function unknown(arg: string): number {
  process.stderr.write(`connector-service: unknown command or flag "${arg}" (see --help)\n`);
  return 2;
}

const code = await main(process.argv.slice(2));
// The last log lines reach stdout before the process ends (an exit drops writes still queued for a slow reader).
await (await import("./observability/logger")).flushLogs();
process.exit(code);
