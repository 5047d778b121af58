import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { waitFor } from "../support/wait";

// A request body the proxy must read (tool policy, pinning, audit) is held whole,
// so it is held to PROXY__MAX_MESSAGE_BYTES and, with every other body held at the same time, to a budget per user
// and one for the process; everything else streams. Here: 8 KiB messages, 20 KiB per user, 28 KiB in all.
const SCRIPTED = "https://held.example/mcp";
const scripted = scriptedServer();
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;
let carol: Awaited<ReturnType<TestApp["user"]>>;
const ids: Record<string, string> = {};

beforeAll(async () => {
  t = await createTestApp({
    env: { PROXY__MAX_MESSAGE_BYTES: "8192", PROXY__HELD_BYTES_PER_USER: "20480", PROXY__HELD_BYTES_TOTAL: "28672" },
    configure: (config) => void (config.proxy.upstreamTimeoutMs = 2000),
  });
  t.network.serve(SCRIPTED, scripted.handler);
  [alice, bob, carol] = await Promise.all([t.user("alice"), t.user("bob"), t.user("carol")]);
  for (const user of [alice, bob, carol]) ids[user.principal.username] = await connectedConnector(user.api, SCRIPTED);
});
afterAll(() => {
  scripted.release();
  return t.close();
});

/** A tools/call of about `bytes` bytes, declared. */
const message = (bytes: number) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "x", arguments: { blob: "y".repeat(bytes - 90) } },
  });
const post = (user: { token: string; principal: { username: string } }, body: BodyInit, headers: Record<string, string> = {}) =>
  t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/${ids[user.principal.username]}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${user.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body,
      // @ts-expect-error Bun's RequestInit takes duplex for streamed bodies
      duplex: "half",
    }),
  );

test("a message over PROXY__MAX_MESSAGE_BYTES is a 413 naming it, declared or not, and never reaches the server", async () => {
  const reached = t.network.requests.length;
  const big = message(9000);
  const declared = await post(alice, big);
  expect(declared.status).toBe(413);
  expect((await declared.json()).detail).toContain("PROXY__MAX_MESSAGE_BYTES");
  const chunked = await post(
    alice,
    new ReadableStream({
      start(controller) {
        for (let i = 0; i < big.length; i += 1000) controller.enqueue(new TextEncoder().encode(big.slice(i, i + 1000)));
        controller.close();
      },
    }),
  );
  expect(chunked.status).toBe(413);
  expect((await chunked.json()).detail).toContain("PROXY__MAX_MESSAGE_BYTES");
  expect(t.network.requests.length).toBe(reached);
});

describe("while the server keeps requests waiting", () => {
  test("a user's held bodies are capped (429 naming PROXY__HELD_BYTES_PER_USER), another user's are not, the process's are (PROXY__HELD_BYTES_TOTAL); all come back", async () => {
    scripted.mode = "hang";
    try {
      // Alice: two 8 KiB messages wait (16 KiB held); a third would be 24 KiB.
      const reached = t.network.requests.length;
      const waiting = [post(alice, message(8000)), post(alice, message(8000))];
      await waitFor("two requests at the server", () => t.network.requests.length === reached + 2);
      const third = await post(alice, message(8000));
      expect(third.status).toBe(429);
      expect(third.headers.get("retry-after")).toBe("1");
      expect((await third.json()).detail).toContain("PROXY__HELD_BYTES_PER_USER");
      // Bob has his own budget: one of his waits too (24 KiB held in all); Carol's first would pass the process's 28 KiB.
      waiting.push(post(bob, message(8000)));
      await waitFor("bob's request at the server", () => t.network.requests.length === reached + 3);
      const over = await post(carol, message(8000));
      expect(over.status).toBe(429);
      expect((await over.json()).detail).toContain("PROXY__HELD_BYTES_TOTAL");
      scripted.release();
      await Promise.all(waiting);
    } finally {
      scripted.mode = "mcp";
      scripted.release();
    }
    // Given back once answered: each user can hold as much again, many times over.
    for (let i = 0; i < 10; i++) {
      const answers = await Promise.all([post(alice, message(8000)), post(alice, message(8000)), post(bob, message(8000))]);
      expect(answers.map((res) => res.status)).toEqual([200, 200, 200]);
    }
  });
});

test("with nothing that reads bodies, a large one streams: the server has its start before the client has sent the rest", async () => {
  const app = await createTestApp({ env: { AUDIT__ENABLED: "false", PROXY__MAX_MESSAGE_BYTES: "8192" } });
  try {
    let firstChunk: (() => void) | undefined;
    const started = new Promise<void>((resolve) => (firstChunk = resolve));
    let received = 0;
    let sinking = false;
    app.network.serve("https://sink.example", async (request) => {
      if (!sinking) return scripted.handler(request);
      const reader = request.body!.getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        received += chunk.value.byteLength;
        firstChunk?.();
      }
      return Response.json({ jsonrpc: "2.0", id: 1, result: { received } });
    });
    const id = await connectedConnector(app.api, "https://sink.example/mcp");
    sinking = true;
    let send!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (controller) => void (send = controller) });
    const answer = app.handle(
      new Request(`${app.publicUrl}/api/v1/connectors/${id}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${app.admin.token}`, "content-type": "application/json", accept: "application/json" },
        body,
        // @ts-expect-error Bun's RequestInit takes duplex for streamed bodies
        duplex: "half",
      }),
    );
    send.enqueue(new Uint8Array(64 * 1024).fill(32));
    await started;
    // 64 KiB are at the server; a megabyte more (over PROXY__MAX_MESSAGE_BYTES: nothing holds it whole) follows.
    for (let i = 0; i < 16; i++) send.enqueue(new Uint8Array(64 * 1024).fill(32));
    send.close();
    expect(await (await answer).json()).toMatchObject({ result: { received: 17 * 64 * 1024 } });
  } finally {
    await app.close();
  }
});

test("an answer is held whole for the audit trail up to 1 MiB only: past it the client has the start while the server still writes", async () => {
  let write!: ReadableStreamDefaultController<Uint8Array>;
  t.network.serve("https://endless.example", (request) =>
    request.method === "POST" && ids.endless
      ? new Response(new ReadableStream<Uint8Array>({ start: (controller) => void (write = controller) }), {
          headers: { "content-type": "application/json" },
        })
      : scripted.handler(request),
  );
  ids.endless = await connectedConnector(alice.api, "https://endless.example/mcp");
  const answer = t.handle(
    new Request(`${t.publicUrl}/api/v1/connectors/${ids.endless}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${alice.token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: message(200),
    }),
  );
  await waitFor("the server's answer to start", () => write !== undefined);
  write.enqueue(new TextEncoder().encode(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`));
  for (let i = 0; i < 17; i++) write.enqueue(new Uint8Array(64 * 1024).fill(120));
  const reader = (await answer).body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toStartWith('{"jsonrpc"');
  write.enqueue(new TextEncoder().encode('"}]}}'));
  write.close();
  await reader.cancel();
});
