import { describe, expect, test } from "bun:test";
import { memberSpan } from "../../src/http/strict-json";
import { createAnswerReuse } from "../../src/virtual-servers/answer-reuse";

// A member's listing parsed once while it stays the same (src/virtual-servers/answer-reuse.ts): the same answer with
// another id is the kept message with that id; anything else is parsed as it is — including answers made to look
// like the kept one with only "the id" changed where the id is not the message's own.

const bytes = (text: string) => new TextEncoder().encode(text);
const LISTING = '{"jsonrpc":"2.0","id":"vs-1","result":{"tools":[{"name":"ping","description":"Answers pong"}]}}';
const KEY = "member-1\ntools/list\n";

/** What `reuse` gives for `text` answering `id`, with what a parse of the text gives beside it. */
function read(reuse: ReturnType<typeof createAnswerReuse>, text: string, id: string, key: string | undefined) {
  return { given: reuse.message(key, bytes(text), id), parsed: JSON.parse(text) as unknown };
}

describe("a member's listing answered again", () => {
  test("with only its id changed, it is the kept message with the new id, not parsed again", () => {
    const reuse = createAnswerReuse();
    const first = read(reuse, LISTING, "vs-1", KEY).given as { result: unknown };
    const again = read(reuse, LISTING.replace('"vs-1"', '"vs-2"'), "vs-2", KEY);
    expect(again.given).toEqual(again.parsed);
    expect((again.given as { id: string; result: unknown }).id).toBe("vs-2");
    // The same result object: the parse was not made again.
    expect((again.given as { result: unknown }).result).toBe(first.result);
  });

  test("an id of another length, and a text that is not ASCII before the id, are reused all the same", () => {
    const reuse = createAnswerReuse();
    const text = (id: string) => `{"result":{"tools":[{"name":"café","title":"日本"}]},"jsonrpc":"2.0","id":"${id}"}`;
    const first = read(reuse, text("vs-9"), "vs-9", KEY).given as { result: unknown };
    const again = read(reuse, text("vs-10"), "vs-10", KEY);
    expect(again.given).toEqual(again.parsed);
    expect((again.given as { result: unknown }).result).toBe(first.result);
  });

  test("a listing that changed, by one byte, is parsed: its change shows", () => {
    const reuse = createAnswerReuse();
    read(reuse, LISTING, "vs-1", KEY);
    const changed = read(reuse, LISTING.replace('"vs-1"', '"vs-2"').replace("pong", "pang"), "vs-2", KEY);
    expect(changed.given).toEqual(changed.parsed);
    expect(JSON.stringify(changed.given)).toContain("pang");
    // And the changed listing is the one kept now.
    const after = read(reuse, LISTING.replace('"vs-1"', '"vs-3"').replace("pong", "pang"), "vs-3", KEY);
    expect(after.given).toEqual(after.parsed);
    expect((after.given as { result: unknown }).result).toBe((changed.given as { result: unknown }).result);
  });

  test("an answer of another request (no key), or to another id, is parsed and keeps nothing", () => {
    const reuse = createAnswerReuse();
    expect(reuse.message(undefined, bytes(LISTING), "vs-1")).toEqual(JSON.parse(LISTING));
    expect(reuse.keptBytes()).toBe(0);
    // An answer whose id is not the request's is no listing to keep (what is made of it is plain-request.ts's affair).
    read(reuse, LISTING, "vs-7", KEY);
    expect(reuse.keptBytes()).toBe(0);
  });
});

describe("answers made to pass for the kept one are parsed as they are", () => {
  /** `kept` answered vs-1, then `forged` (the kept text with "vs-2" put somewhere) answers vs-2: read as it is. */
  function expectParsed(kept: string, forged: string) {
    const reuse = createAnswerReuse();
    read(reuse, kept, "vs-1", KEY);
    const answer = read(reuse, forged, "vs-2", KEY);
    expect(answer.given).toEqual(answer.parsed);
    expect((answer.given as { id: string }).id).toBe("vs-1");
  }

  test("the id echoed in a description, the message's own id written with an escape", () => {
    // The member writes its id as "vs\u002d1" and the next id ("vs-2") is where "vs-1" was in a description.
    const kept = '{"jsonrpc":"2.0","id":"vs\\u002d1","result":{"tools":[{"name":"a","description":"see \\"vs-1"}]}}';
    expect((JSON.parse(kept) as { id: string }).id).toBe("vs-1");
    expectParsed(kept, kept.replace('"vs-1"', '"vs-2"'));
  });

  test("an id nested in the result, where the message's own id comes last", () => {
    expectParsed(
      '{"result":{"id":"vs-1","tools":[]},"jsonrpc":"2.0","id":"vs-1"}',
      '{"result":{"id":"vs-2","tools":[]},"jsonrpc":"2.0","id":"vs-1"}',
    );
  });

  test("two ids at the top level (a reader takes either): never reused", () => {
    expectParsed(
      '{"id":"vs-1","jsonrpc":"2.0","id":"vs-1","result":{"tools":[]}}',
      '{"id":"vs-2","jsonrpc":"2.0","id":"vs-1","result":{"tools":[]}}',
    );
  });
});

describe("answers whose bytes a decoder changes (found by review)", () => {
  const cat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts.map((p) => Buffer.from(p))));
  /** What a plain read of `given` makes of it: its message, or the error it throws. */
  const plainly = (given: Uint8Array) => {
    try {
      return JSON.parse(new TextDecoder().decode(given)) as unknown;
    } catch (error) {
      return error instanceof Error ? error.name : error;
    }
  };
  const readBytes = (reuse: ReturnType<typeof createAnswerReuse>, given: Uint8Array, id: string) => {
    try {
      return reuse.message(KEY, given, id);
    } catch (error) {
      return error instanceof Error ? error.name : error;
    }
  };

  test("bytes that are not UTF-8 before the id do not move where the id is looked for", () => {
    const head = bytes('{"jsonrpc":"2.0","p":"');
    const tail = bytes('","id":"vs-1","result":{"tools":[{"name":"abcd"}]}}');
    // Invalid bytes decode to U+FFFD (3 bytes each when counted again), shifting a decoded text's positions onto "abcd".
    const distance = Buffer.from(tail).indexOf('"abcd"') - Buffer.from(tail).indexOf('"vs-1"');
    const junk =
      distance % 2
        ? [...Array<number>((distance - 1) / 2).fill(0xff), 0xe2, 0x82]
        : [...Array<number>(distance / 2 - 1).fill(0xff), 0xe2, 0x82, 0xe2, 0x82];
    const kept = cat(head, new Uint8Array(junk), tail);
    const reuse = createAnswerReuse();
    expect((reuse.message(KEY, kept, "vs-1") as { id: string }).id).toBe("vs-1");
    const at = Buffer.from(kept).indexOf('"abcd"');
    const forged = cat(kept.subarray(0, at), bytes('"vs-2"'), kept.subarray(at + 6));
    expect(readBytes(reuse, forged, "vs-2")).toEqual(plainly(forged));
  });

  test("a byte order mark before the answer: nothing is reused, not even a text that is no JSON", () => {
    const kept = cat(new Uint8Array([0xef, 0xbb, 0xbf]), bytes('{"jsonrpc":"2.0","id":"vs-1","result":{"tools":[]}}'));
    const reuse = createAnswerReuse();
    reuse.message(KEY, kept, "vs-1");
    const at = Buffer.from(kept).indexOf('"vs-1"') - 3;
    const forged = cat(kept.subarray(0, at), bytes('"vs-2"'), kept.subarray(at + 6));
    expect(readBytes(reuse, forged, "vs-2")).toEqual(plainly(forged));
    expect(plainly(forged)).toBe("SyntaxError");
  });
});

test("what is kept stays within its bytes: the longest unused go first", () => {
  const reuse = createAnswerReuse(2 * LISTING.length);
  for (const member of ["a", "b", "c"]) read(reuse, LISTING, "vs-1", `${member}\ntools/list\n`);
  expect(reuse.keptBytes()).toBe(2 * LISTING.length);
  // The first member's was let go; the last two are reused.
  const [a, c] = [`a\ntools/list\n`, `c\ntools/list\n`];
  const fromA = reuse.message(a, bytes(LISTING.replace('"vs-1"', '"vs-2"')), "vs-2") as { result: unknown };
  const fromC1 = reuse.message(c, bytes(LISTING.replace('"vs-1"', '"vs-2"')), "vs-2") as { result: unknown };
  const fromC2 = reuse.message(c, bytes(LISTING.replace('"vs-1"', '"vs-3"')), "vs-3") as { result: unknown };
  expect(fromA).toEqual(JSON.parse(LISTING.replace('"vs-1"', '"vs-2"')));
  expect(fromC2.result).toBe(fromC1.result);
  expect(reuse.keptBytes()).toBeLessThanOrEqual(2 * LISTING.length);
});

describe("memberSpan", () => {
  test("finds a top-level member's value, by its decoded name, and only one", () => {
    const text = '{ "a" : [1, {"id": 2}], "\\u0069d" : "x\\"y" , "z": null }';
    const span = memberSpan(text, "id")!;
    expect(text.slice(...span)).toBe('"x\\"y"');
    expect(memberSpan(text, "missing")).toBeUndefined();
    expect(memberSpan('{"id":1,"id":2}', "id")).toBeUndefined();
    expect(memberSpan('[{"id":1}]', "id")).toBeUndefined();
    expect(memberSpan("{}", "id")).toBeUndefined();
  });
});
