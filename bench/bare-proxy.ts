/**
 * The floor of a Bun proxy: Bun.serve in, fetch out, body streamed both ways, nothing else (no auth, no
 * lookups, no log). Run beside the others to show what Bun's own HTTP server and client cost per hop.
 *
 * With `held`, the floor of a proxy that must see what it relays: the request read whole and parsed as JSON (the
 * message a policy decides on), the answer read whole before it is returned (its content type and outcome checked) —
 * what a fail-closed proxy cannot skip, still with no auth, lookups or log.
 *
 * Run: bun bench/bare-proxy.ts <upstream-url> <port> [held]
 */
const [upstream, port, mode] = process.argv.slice(2);
const held = mode === "held";
Bun.serve({
  hostname: "127.0.0.1",
  port: Number(port),
  async fetch(request) {
    const headers = { "content-type": "application/json", accept: request.headers.get("accept") ?? "" };
    if (!held) {
      const response = await fetch(upstream!, {
        method: request.method,
        headers,
        body: request.body,
        duplex: "half",
      } as RequestInit);
      return new Response(response.body, { status: response.status, headers: response.headers });
    }
    const body = await request.bytes();
    if (body.length > 0) JSON.parse(new TextDecoder().decode(body));
    const response = await fetch(upstream!, { method: request.method, headers, body });
    const answer = await response.bytes();
    return new Response(answer, {
      status: response.status,
      headers: { "content-type": response.headers.get("content-type") ?? "" },
    });
  },
});

export {};
