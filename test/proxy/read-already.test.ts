import { describe, expect, test } from "bun:test";
import { alreadyRead } from "../../src/http/read-already";
import { createHeldBytes } from "../../src/proxy/held-bytes";
import { createRequestReader } from "../../src/proxy/read";

// The proxy's read step for a request the service built in-process from a message read at its edge.
const message = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { text: "x".repeat(200) } } };
const built = (bytes: number) =>
  alreadyRead(
    new Request("http://cs.test/mcp", { method: "POST", headers: { "content-type": "application/json" } }),
    message,
    new Uint8Array(bytes),
  );
const options = { decide: true, replay: false };
/** A reader whose limits are the defaults of this test, but for `limits`. */
const reader = (limits: Partial<Parameters<typeof createHeldBytes>[0]> = {}) =>
  createRequestReader(
    createHeldBytes({ maxMessageBytes: 1000, maxBodyBytes: 10_000, heldBytesPerUser: 10_000, heldBytesTotal: 10_000, ...limits }),
  );

describe("a message read already (http/read-already.ts)", () => {
  test("is taken as read, its bytes held until released", async () => {
    const read = reader({ heldBytesPerUser: 500 });
    const first = await read("u", built(300), options);
    expect(first).toMatchObject({ kind: "message", message, bytes: 300 });
    // The user's budget (500) has no room for a second one while the first is held …
    await expect(read("u", built(300), options)).rejects.toThrow("PROXY__HELD_BYTES_PER_USER");
    (first as { release(): void }).release();
    // … and has once it is released.
    expect(await read("u", built(300), options)).toMatchObject({ kind: "message" });
  });

  test("larger than a message may be: refused as its body would be (413)", async () => {
    await expect(reader({ maxMessageBytes: 100 })("u", built(300), options)).rejects.toMatchObject({ status: 413 });
  });

  test("a client's request, however it looks, is read from its body", async () => {
    const body = '{"jsonrpc":"2.0","id":2,"method":"tools/list"}';
    const request = new Request("http://cs.test/mcp", { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(await reader()("u", request, options)).toMatchObject({ kind: "message", message: JSON.parse(body) });
  });
});
