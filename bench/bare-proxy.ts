/**
 * The floor of a Bun proxy: Bun.serve in, fetch out, body streamed both ways, nothing else (no auth, no
 * lookups, no log). Run beside the others to show what Bun's own HTTP server and client cost per hop.
 * Run: bun bench/bare-proxy.ts <upstream-url> <port>
 */
const [upstream, port] = process.argv.slice(2);
Bun.serve({
  hostname: "127.0.0.1",
  port: Number(port),
  async fetch(request) {
    const response = await fetch(upstream!, {
      method: request.method,
      headers: { "content-type": "application/json", accept: request.headers.get("accept") ?? "" },
      body: request.body,
      duplex: "half",
    } as RequestInit);
    return new Response(response.body, { status: response.status, headers: response.headers });
  },
});

export {};
