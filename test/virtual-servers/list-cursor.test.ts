import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createSealer } from "../../src/secrets/sealer";
import { decodeListCursor, encodeListCursor } from "../../src/virtual-servers/list-cursor";

const KEY = randomBytes(32);
const sealer = createSealer(KEY);
const SERVER = "0196b1f4-3c1a-7a8e-9b2d-5f0e1c2d3a4b";

describe("the cursor of a merged list", () => {
  test("decodes to the position it encodes, on any process with the same key (a replica)", () => {
    const cursor = encodeListCursor(sealer, SERVER, "tools", { after: "github__create_issue" });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursor).not.toContain("github");
    expect(decodeListCursor(sealer, SERVER, "tools", cursor)).toEqual({ after: "github__create_issue" });
    const replica = createSealer(KEY);
    expect(decodeListCursor(replica, SERVER, "tools", cursor)).toEqual({ after: "github__create_issue" });
  });

  test("survives a key rotation (the previous key still opens it)", () => {
    const oldKey = randomBytes(32);
    const cursor = encodeListCursor(createSealer(oldKey), SERVER, "prompts", { after: "a" });
    expect(decodeListCursor(createSealer(randomBytes(32), [oldKey]), SERVER, "prompts", cursor)).toEqual({ after: "a" });
  });

  test("refuses a cursor of another virtual server, another list, or another key", () => {
    const cursor = encodeListCursor(sealer, SERVER, "tools", { after: "x" });
    expect(decodeListCursor(sealer, "another-server", "tools", cursor)).toBeUndefined();
    expect(decodeListCursor(sealer, SERVER, "resources", cursor)).toBeUndefined();
    expect(decodeListCursor(createSealer(randomBytes(32)), SERVER, "tools", cursor)).toBeUndefined();
  });

  test.each([
    ["a made-up position", Buffer.from(JSON.stringify({ v: 1, after: "x" })).toString("base64url")],
    ["an upstream's cursor", "eyJwYWdlIjoyfQ"],
    ["not base64url", "abc+/="],
    ["empty", ""],
    ["too long", "A".repeat(10_000)],
    ["a number", 42],
    ["null", null],
    ["an object", { after: "x" }],
  ])("refuses %s", (_, cursor) => {
    expect(decodeListCursor(sealer, SERVER, "tools", cursor)).toBeUndefined();
  });

  test("refuses a cursor changed by one character", () => {
    const cursor = encodeListCursor(sealer, SERVER, "tools", { after: "x" });
    const i = Math.floor(cursor.length / 2);
    const bent = cursor.slice(0, i) + (cursor[i] === "A" ? "B" : "A") + cursor.slice(i + 1);
    expect(decodeListCursor(sealer, SERVER, "tools", bent)).toBeUndefined();
  });

  test("a sealed value of another version or shape is refused", () => {
    const wrap = (plain: string) =>
      Buffer.from(sealer.seal(plain, `virtual-server-cursor:${SERVER}:tools`)).toString("base64url");
    expect(decodeListCursor(sealer, SERVER, "tools", wrap(JSON.stringify({ v: 2, after: "x" })))).toBeUndefined();
    expect(decodeListCursor(sealer, SERVER, "tools", wrap(JSON.stringify({ v: 1, after: 3 })))).toBeUndefined();
    expect(decodeListCursor(sealer, SERVER, "tools", wrap("not json"))).toBeUndefined();
    expect(decodeListCursor(sealer, SERVER, "tools", wrap(JSON.stringify({ v: 1, after: "y" })))).toEqual({ after: "y" });
  });
});
