import { expect, test } from "bun:test";
import { messageReadAlready } from "../../src/http/read-already";
import { openMemberSession, type MemberPeer } from "../../src/virtual-servers/member-session";
import { createRelay } from "../../src/virtual-servers/relay";

// One member session (src/virtual-servers/member-session.ts) over an in-process exchange that answers as a member
// behind its proxy URL, scripted to the millisecond where a real member cannot be: two calls that both find the
// member's session forgotten (404) each open it again, and the openings overlap. No real peer can make their
// interleaving happen on purpose; the exchange below speaks the same Streamable HTTP a member does.
type Message = { id?: string | number; method: string; params?: Record<string, unknown> };

function member() {
  let sessions = 0;
  const forgotten = new Set<string>();
  /** How long the member takes to set the log level, by session: session-2's is the slow one. */
  const levelDelay = new Map<string, number>();
  const used: string[] = [];
  /** The sessions ended with a DELETE. */
  const ended: string[] = [];
  async function exchange(_connectorId: string, request: Request): Promise<Response> {
    if (request.method === "DELETE") {
      ended.push(request.headers.get("mcp-session-id") ?? "");
      forgotten.add(request.headers.get("mcp-session-id") ?? "");
      return new Response(null, { status: 200 });
    }
    if (request.method !== "POST") return new Response(null, { status: 405 });
    // The plain calls carry their message in-process; the SDK client's requests, a body.
    const message = (messageReadAlready(request)?.message ?? (await request.json())) as Message;
    const session = request.headers.get("mcp-session-id") ?? "";
    if (message.method === "initialize") {
      const id = `session-${++sessions}`;
      levelDelay.set(id, sessions === 2 ? 50 : 0);
      const result = {
        protocolVersion: "2025-11-25",
        capabilities: { tools: {}, logging: {} },
        serverInfo: { name: "member", version: "1" },
      };
      return Response.json({ jsonrpc: "2.0", id: message.id, result }, { headers: { "mcp-session-id": id } });
    }
    // basic/transports "Session Management": a session the server forgot is a 404.
    if (forgotten.has(session)) return new Response(null, { status: 404 });
    if (message.id === undefined) return new Response(null, { status: 202 });
    if (message.method === "logging/setLevel") await Bun.sleep(levelDelay.get(session) ?? 0);
    if (message.method === "tools/call") used.push(session);
    return Response.json({ jsonrpc: "2.0", id: message.id, result: { content: [{ type: "text", text: session }] } });
  }
  return { exchange, forget: (session: string) => void forgotten.add(session), used, ended, opened: () => sessions };
}

const peer: MemberPeer = {
  capabilities: {},
  stream: () => undefined,
  relay: createRelay(),
  listChanged: () => undefined,
  resourceUpdated: () => undefined,
  // A level the client set: each opening tells it to the member before the session is used.
  logLevel: () => "info",
  log: () => undefined,
};

const text = (result: unknown) => (result as { content: { text: string }[] }).content[0]!.text;

test("two calls that find the session forgotten reopen it; the session left is a live one, for plain calls and the SDK's", async () => {
  const m = member();
  const session = openMemberSession(m.exchange, "c-1", peer);
  const call = (onprogress?: () => void) =>
    session.request("tools/call", { name: "echo" }, { timeout: 2000, ...(onprogress && { onprogress }) });
  expect(text(await call())).toBe("session-1");

  m.forget("session-1");
  // Both find session-1 forgotten: the first opens session-2 (its level told slowly), the second goes on in that
  // opening rather than letting it go for one of its own.
  const both = await Promise.all([call(), call()]);
  expect(both.map(text)).toEqual(["session-2", "session-2"]);

  // What is left open is session-2, connected: a plain call and one through the SDK client (progress asked) use it.
  expect(text(await call())).toBe("session-2");
  expect(text(await call(() => undefined))).toBe("session-2");
  await session.close();
});

test("two calls that find the session forgotten open one new session between them, and no session is left without its DELETE", async () => {
  const m = member();
  const session = openMemberSession(m.exchange, "c-1", peer);
  const call = () => session.request("tools/call", { name: "echo" }, { timeout: 2000 });
  expect(text(await call())).toBe("session-1");
  m.forget("session-1");
  // The second to find session-1 forgotten goes on in the session the first opens: a client session holds at most
  // one upstream session per member (before, it opened a third and left the second open at the member for ever).
  const both = await Promise.all([call(), call()]);
  expect(both.map(text)).toEqual(["session-2", "session-2"]);
  expect(m.opened()).toBe(2);
  await session.close();
  expect(m.ended).toEqual(["session-2"]);
});

test("a session closed while it opens: a request still under way opens none after it", async () => {
  const m = member();
  const session = openMemberSession(m.exchange, "c-1", peer);
  // A listing's first step (the opening), the client session ending meanwhile, then the listing's request.
  const capabilities = session.capabilities(2000);
  const closing = session.close();
  expect(await capabilities).toMatchObject({ tools: {} });
  await closing;
  const late = await session.request("tools/list", undefined, { timeout: 2000 }).catch((e: Error) => e);
  expect(late).toBeInstanceOf(Error);
  // Before, the opening made the session current again after close() let it go: the request was sent in the ended
  // session, and the member's 404 opened a second that nothing ever ended.
  expect(m.opened()).toBe(1);
  expect(m.ended).toEqual(["session-1"]);
});
