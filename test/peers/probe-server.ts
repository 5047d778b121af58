import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { z } from "zod";

/** This file: run it as `bun <PROBE_SERVER>`, a stdio MCP server. */
export const PROBE_SERVER = import.meta.path;
/** The preset command that runs it (the Bun running the tests, by absolute path). */
export const probeCommand = () => [process.execPath, PROBE_SERVER];

/**
 * A stdio MCP server that does what a hostile or careless managed server could: read any path, list a directory,
 * write and read back, call the network, list its open files, run a program. Tests of the local driver's sandbox ask
 * it to reach for the service's secrets. Each tool answers text: the result, or `ERROR <code>: <message>`.
 */
function probeServer(): McpServer {
  const server = new McpServer({ name: "probe", version: "1.0.0" });
  const attempt = (work: () => string | Promise<string>) => async () => {
    try {
      return { content: [{ type: "text" as const, text: await work() }] };
    } catch (e) {
      const { code, message } = e as NodeJS.ErrnoException;
      return { content: [{ type: "text" as const, text: `ERROR ${code ?? "?"}: ${message}` }] };
    }
  };
  server.registerTool("read", { inputSchema: { path: z.string() } }, ({ path }) => attempt(() => readFileSync(path, "utf8"))());
  server.registerTool("list", { inputSchema: { path: z.string() } }, ({ path }) => attempt(() => readdirSync(path).join("\n"))());
  server.registerTool("write", { inputSchema: { path: z.string(), text: z.string() } }, ({ path, text }) =>
    attempt(() => {
      writeFileSync(path, text);
      return readFileSync(path, "utf8");
    })(),
  );
  server.registerTool("fetch", { inputSchema: { url: z.string() } }, ({ url }) =>
    attempt(async () => {
      const res = await fetch(url);
      return `${res.status} ${await res.text()}`;
    })(),
  );
  server.registerTool("fds", {}, () =>
    attempt(() =>
      readdirSync("/proc/self/fd")
        .map((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`);
          } catch {
            return "";
          }
        })
        .join("\n"),
    )(),
  );
  server.registerTool("run", { inputSchema: { argv: z.array(z.string()) } }, ({ argv }) =>
    attempt(() => {
      const done = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
      return `exit ${done.exitCode}\n${done.stdout.toString()}${done.stderr.toString()}`;
    })(),
  );
  server.registerTool("whoami", {}, () =>
    attempt(() => JSON.stringify({ pid: process.pid, ppid: process.ppid, cwd: process.cwd(), home: process.env.HOME }))(),
  );
  return server;
}

if (import.meta.main) {
  await probeServer().connect(new StdioServerTransport());
  // Gone when its stdio is, as servers should be (the gateway ends a session by closing it).
  process.stdin.on("end", () => process.exit(0));
}
