/**
 * A fast MCP upstream for the proxy benchmark: stateless, JSON answers only (MCP 2025-11-25 Streamable HTTP
 * allows application/json responses). Enough of MCP for connect's initialize handshake and tools/call.
 * Run: bun bench/upstream.ts <port>
 */
const port = Number(process.argv[2] ?? 0);
const RESULT = { content: [{ type: "text", text: "pong" }], isError: false };

const server = Bun.serve({
  hostname: "127.0.0.1",
  port,
  async fetch(request) {
    if (request.method !== "POST") return new Response(null, { status: 405 });
    const message = (await request.json()) as { id?: number | string; method: string };
    if (message.id === undefined) return new Response(null, { status: 202 });
    const result =
      message.method === "initialize"
        ? { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "bench-upstream", version: "1" } }
        : message.method === "tools/call"
          ? RESULT
          : message.method === "tools/list"
            ? { tools: [{ name: "ping", inputSchema: { type: "object" } }] }
            : {};
    return Response.json({ jsonrpc: "2.0", id: message.id, result });
  },
});
console.log(JSON.stringify({ listening: server.port }));

export {};
