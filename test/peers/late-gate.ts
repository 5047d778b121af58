/**
 * A gate on 127.0.0.1 in front of an MCP server (its URL, or a fetch handler): a POST whose message names `method` is
 * passed on `delayMs` late while `delays()` says so — a member slow at one step, for the tests of time bounds and of
 * what happens meanwhile. Everything else passes at once. `url` is the gate's MCP URL; `stop()` ends it.
 */
export function lateGate(
  to: string | ((request: Request) => Promise<Response>),
  method: string,
  { delayMs, delays = () => true }: { delayMs: number; delays?: () => boolean },
) {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 30,
    async fetch(request) {
      const body = request.method === "POST" ? await request.text() : undefined;
      if (delays() && body?.includes(`"${method}"`)) await Bun.sleep(delayMs);
      const passed = new Request(typeof to === "string" ? to : request.url, {
        method: request.method,
        headers: request.headers,
        body,
      });
      return typeof to === "string" ? fetch(passed) : to(passed);
    },
  });
  return { url: `http://127.0.0.1:${server.port}/mcp`, stop: () => server.stop(true) };
}
