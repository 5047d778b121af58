import { describe, expect, test } from "bun:test";
import { messageReadAlready } from "../../src/http/read-already";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { createDirectSend } from "../../src/era-bridge/direct-send";

// The hop is the proxy's own request path; here a function answering as an MCP server would, to drive each case.
const call = { jsonrpc: "2.0", id: "r-1", method: "tools/call", params: { name: "echo" } } as JSONRPCMessage;
const stream = (text: string) => new Response(text, { headers: { "content-type": "text/event-stream" } });

function send(
  answer: Response | (() => Response),
  session: { sessionId: string; protocolVersion: string } | null = { sessionId: "s-1", protocolVersion: "2025-11-25" },
) {
  const sent: Request[] = [];
  const delivered: JSONRPCMessage[] = [];
  const viaTransport: Array<unknown> = [];
  const direct = createDirectSend(
    "http://bridge.invalid/api/v1/connectors/c/mcp",
    async (request) => (sent.push(request), typeof answer === "function" ? answer() : answer),
    () => session ?? undefined,
  );
  const done = direct(
    call,
    (m) => delivered.push(m),
    async (options) => void viaTransport.push(options ?? {}),
  );
  return { done, sent, delivered, viaTransport };
}

describe("the era bridge's own requests (direct-send.ts)", () => {
  test("go out on the transport's session, in its version, and a JSON answer is delivered", async () => {
    const { done, sent, delivered } = send(Response.json({ jsonrpc: "2.0", id: "r-1", result: { content: [] } }));
    await done;
    expect(sent[0]!.headers.get("mcp-session-id")).toBe("s-1");
    expect(sent[0]!.headers.get("mcp-protocol-version")).toBe("2025-11-25");
    // In-process, with its message rather than a body (http/read-already.ts), and that message's size.
    const { message, body } = messageReadAlready(sent[0]!)!;
    expect(message).toEqual(call);
    expect(JSON.parse(new TextDecoder().decode(body))).toEqual(call);
    expect(delivered).toEqual([{ jsonrpc: "2.0", id: "r-1", result: { content: [] } }] as JSONRPCMessage[]);
  });

  test("every message of an event stream is delivered: progress, the server's question, the answer", async () => {
    const { done, delivered } = send(
      stream(
        'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-1","progress":1}}\n\n' +
          'data: {"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{}}\n\n' +
          "data: not json\n\n" +
          'data: {"jsonrpc":"2.0","id":"r-1","result":{}}\n\n',
      ),
    );
    await done;
    expect(delivered.map((m) => ("method" in m ? m.method : "answer"))).toEqual([
      "notifications/progress",
      "elicitation/create",
      "answer",
    ]);
  });

  test("a stream that ends without the answer: resumed after its last event id, or answered with an error", async () => {
    const resumable = send(stream('id: e-2\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'));
    await resumable.done;
    expect(resumable.viaTransport).toEqual([{ resumptionToken: "e-2" }]);
    const cut = send(stream(""));
    await cut.done;
    expect(cut.delivered).toMatchObject([{ id: "r-1", error: { message: expect.stringContaining("without answering") } }]);
  });

  test("an empty event id names nothing to resume after: the request is answered with an error, not sent again", async () => {
    const { done, delivered, viaTransport } = send(stream("id: e-1\ndata:\n\nid:\ndata:\n\n"));
    await done;
    expect(viaTransport).toEqual([]);
    expect(delivered).toMatchObject([{ id: "r-1", error: { message: expect.stringContaining("without answering") } }]);
  });

  test("a message the gateway cannot take is let go, and the answer after it still delivered", async () => {
    const delivered: JSONRPCMessage[] = [];
    const direct = createDirectSend(
      "http://bridge.invalid/api/v1/connectors/c/mcp",
      async () =>
        stream('data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\ndata: {"jsonrpc":"2.0","id":"r-1","result":{}}\n\n'),
      () => ({ sessionId: "s-1" }),
    );
    await direct(
      call,
      (m) => {
        if (!("id" in m)) throw new TypeError("no params");
        delivered.push(m);
      },
      async () => undefined,
    );
    expect(delivered).toEqual([{ jsonrpc: "2.0", id: "r-1", result: {} }] as JSONRPCMessage[]);
  });

  test("a session the server forgot, or none yet, goes through the transport (which opens one)", async () => {
    const forgotten = send(new Response("no such session", { status: 404 }));
    await forgotten.done;
    expect(forgotten.viaTransport).toEqual([{}]);
    const none = send(Response.json({}), null);
    await none.done;
    expect(none.sent).toEqual([]);
    expect(none.viaTransport).toEqual([{}]);
  });

  test("an HTTP error is thrown with what the server said", async () => {
    const { done } = send(new Response('{"title":"Too Many Requests"}', { status: 429 }));
    await expect(done).rejects.toThrow('Error POSTing to endpoint: {"title":"Too Many Requests"}');
  });
});
