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
  async function exchange(_connectorId: string, request: Request): Promise<Response> {
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
  return { exchange, forget: (session: string) => void forgotten.add(session), used };
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
  // Both find session-1 forgotten: the first opens session-2, the second (finding that opening current) session-3.
  // Session-2's level is told last: its opening, stale by then, must still go on with session-2 (and session-2 is the
  // one closed), not with the session current when it ends (found by review: it took session-3 and closed it).
  const both = await Promise.all([call(), call()]);
  expect(both.map(text).sort()).toEqual(["session-2", "session-3"]);

  // What is left open is session-3, connected: a plain call and one through the SDK client (progress asked) use it.
  expect(text(await call())).toBe("session-3");
  expect(text(await call(() => undefined))).toBe("session-3");
  await session.close();
});
