import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";

export type Mode = "mcp" | "stream" | "hang";

export type ScriptedServer = {
  handler(request: Request): Promise<Response>;
  mode: Mode;
  /** Event streams the server opened, and how many of them were cancelled by the reader going away. */
  streams: { opened: number; cancelled: number };
  /** Answers the requests left hanging (503), so nothing waits on them after a test. */
  release(): void;
};

/**
 * An upstream whose behaviour a test sets: "mcp" answers as an MCP server (the SDK's, stateless, so connect
 * works); "stream" answers every POST with an endless event stream (an event every `tickMs`) and records when
 * its reader cancels it; "hang" never sends response headers. Used where the test must see the upstream's side.
 */
export function scriptedServer(tickMs = 20): ScriptedServer {
  const hung: (() => void)[] = [];
  const state: ScriptedServer = {
    mode: "mcp",
    streams: { opened: 0, cancelled: 0 },
    release() {
      for (const answer of hung.splice(0)) answer();
    },
    async handler(request) {
      if (state.mode === "hang")
        return new Promise<Response>((resolve) => hung.push(() => resolve(new Response(null, { status: 503 }))));
      // Only POSTs are scripted: a late GET (the SDK client of connect opens one after initialize) is not.
      if (state.mode === "stream" && request.method !== "POST") return new Response(null, { status: 405 });
      if (state.mode === "stream") {
        state.streams.opened++;
        let timer: ReturnType<typeof setInterval>;
        let n = 0;
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            const tick = () => controller.enqueue(new TextEncoder().encode(`id: ${++n}\ndata: {"tick":${n}}\n\n`));
            tick();
            timer = setInterval(tick, tickMs);
          },
          cancel() {
            clearInterval(timer);
            state.streams.cancelled++;
          },
        });
        return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
      }
      const mcp = new McpServer({ name: "scripted", version: "1.0.0" });
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp.connect(transport);
      return transport.handleRequest(request);
    },
  };
  return state;
}
