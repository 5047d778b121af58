import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createDemoServer } from "../demo/server";

/**
 * `connector-service demo-server`: the demo MCP server on stdin and stdout (MCP 2025-11-25, basic/transports §stdio:
 * nothing but MCP messages on stdout; stderr is free for logs). Ends when its client closes stdin, or on SIGTERM or
 * SIGINT.
 */
export async function demoServer(): Promise<number> {
  const server = createDemoServer();
  const transport = new StdioServerTransport();
  const ended = new Promise<void>((resolve) => {
    // The transport does not watch for the end of stdin itself: the client closing it is how a stdio session ends.
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
    transport.onclose = resolve;
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  await server.connect(transport);
  await ended;
  await server.close();
  return 0;
}
