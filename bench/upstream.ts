/**
 * A fast MCP upstream for the proxy benchmark: stateless, JSON answers (MCP 2025-11-25 Streamable HTTP allows
 * application/json responses), but for `ping-stream` (its answer as an event stream) and `ask` (below). Enough of MCP for connect's initialize handshake and tools/call.
 * Run: bun bench/upstream.ts <port> [tool count]
 */
const port = Number(process.argv[2] ?? 0);
/** How many tools it lists (bench/virtual.ts: 50): `ping`, then `tool_1`… with a sentence of description each. */
const toolCount = Number(process.argv[3] ?? 1);
const TOOLS = Array.from({ length: toolCount }, (_, i) => ({
  name: i === 0 ? "ping" : `tool_${i}`,
  description: `Tool number ${i} of the bench upstream: answers pong, whatever it is given.`,
  inputSchema: { type: "object", properties: { text: { type: "string" } } },
}));
const RESULT = { content: [{ type: "text", text: "pong" }], isError: false };

/**
 * `ask` (bench/eras.ts): a call that asks its client first, as a 2025 server does — an `elicitation/create` request on
 * the call's event stream, the result once the client POSTs its answer (MCP 2025-11-25 client/elicitation).
 */
const waiting = new Map<string, (answer: unknown) => void>();
let asked = 0;
function askFirst(id: number | string): Response {
  const question = `q-${++asked}`;
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (m: unknown) => controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify(m)}\n\n`));
      send({
        jsonrpc: "2.0",
        id: question,
        method: "elicitation/create",
        params: { message: "Go on?", requestedSchema: { type: "object", properties: {} } },
      });
      waiting.set(question, () => {
        send({ jsonrpc: "2.0", id, result: RESULT });
        controller.close();
      });
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port,
  async fetch(request) {
    if (request.method !== "POST") return new Response(null, { status: 405 });
    const message = (await request.json()) as { id?: number | string; method?: string; params?: { name?: string } };
    // The client's answer to `ask`'s question.
    if (message.method === undefined && message.id !== undefined) {
      waiting.get(String(message.id))?.(message);
      waiting.delete(String(message.id));
      return new Response(null, { status: 202 });
    }
    if (message.id === undefined) return new Response(null, { status: 202 });
    if (message.method === "tools/call" && message.params?.name === "ask") return askFirst(message.id);
    // `ping-stream`: the answer on an event stream of its own, as the MCP SDK's servers answer by default.
    if (message.method === "tools/call" && message.params?.name === "ping-stream")
      return new Response(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: message.id, result: RESULT })}\n\n`, {
        headers: { "content-type": "text/event-stream" },
      });
    const result =
      message.method === "initialize"
        ? { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "bench-upstream", version: "1" } }
        : message.method === "tools/call"
          ? RESULT
          : message.method === "tools/list"
            ? { tools: TOOLS }
            : {};
    return Response.json({ jsonrpc: "2.0", id: message.id, result });
  },
});
console.log(JSON.stringify({ listening: server.port }));

export {};
