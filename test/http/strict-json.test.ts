import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { MalformedJson, MAX_NESTING, parseStrictJson, parseStrictRequest, type Levels } from "../../src/http/strict-json";

// The strict reader on its own: whatever JSON.stringify writes it reads back as JSON.parse does; what it refuses is
// exactly the duplicates and case variants at the levels it is asked to check; numbers come back as written.
const REQUEST: Levels = {
  members: { params: { members: { _meta: {} } } },
  elements: { members: { params: { members: { _meta: {} } } } },
};
const encode = (text: string) => new TextEncoder().encode(text);

describe("what JSON.stringify writes", () => {
  test("is read back as JSON.parse reads it, whatever it holds (random values, spaced or not)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, spaced) => {
        const text = JSON.stringify(
          { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x", arguments: value, _meta: { value } } },
          null,
          spaced ? 2 : undefined,
        );
        expect(JSON.stringify(parseStrictJson(encode(text), REQUEST))).toBe(JSON.stringify(JSON.parse(text)));
      }),
      { numRuns: 500 },
    );
  });

  test("strings full of quotes, backslashes and brackets are skipped whole", () => {
    const tricky = ['\\"', "\\\\", '\\\\\\"}', "]}{[", "\\u0022", '\\"method\\":\\"x\\"'];
    for (const s of tricky) {
      const text = `{"method":"tools/call","params":{"arguments":{"a":"${s}","method":"${s}"},"name":"${s}"},"id":"${s}"}`;
      expect(parseStrictJson(text, REQUEST)).toEqual(JSON.parse(text));
    }
  });
});

describe("names", () => {
  const refused = (text: string) => () => parseStrictJson(text, REQUEST);
  test("twice, or as case variants, at a checked level: refused", () => {
    for (const text of [
      '{"id":1,"id":2}',
      '{"id":1,"ID":2}',
      '{"params":{"name":"a","NAME":"b"}}',
      '{"params":{"_meta":{"progressToken":1,"progresstoken":2}}}',
      '{"params":{},"\\u0070arams":{}}',
      '{"params":{},"param\u017f":{}}',
      '{"name":1,"\u212aname":2,"kname":3}',
      '{"id":1,"\u0130d":2}',
      '[{"id":1},{"method":"a","Method":"b"}]',
    ]) {
      expect(refused(text)).toThrow(MalformedJson);
    }
  });

  test("below the checked levels (a tool's own arguments), and distinct names: accepted", () => {
    for (const text of [
      '{"params":{"arguments":{"path":"a","Path":"b","path2":1}}}',
      '{"params":{"arguments":{"x":1,"x":2}}}',
      '{"a":1,"b":2,"ab":3,"ba":4}',
      '{"é":1,"e":2}',
    ]) {
      expect(refused(text)).not.toThrow();
    }
  });
});

describe("numbers", () => {
  test("come back exactly as written, wherever they are", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
          fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => (Object.is(d, -0) ? "-0" : String(d))),
          fc
            .tuple(fc.integer({ min: 0, max: 999 }), fc.integer({ min: 0, max: 999999 }), fc.integer({ min: -400, max: 400 }))
            .map(([a, b, e]) => `${a}.${b}e${e}`),
          fc.constantFrom("1.0", "-0", "1E3", "0.1000000000000000055511151231257827", "1e400", "-1e-400", "12345678901234567890"),
        ),
        (lexeme) => {
          const text = `{"id":${lexeme},"params":{"arguments":{"n":[${lexeme}]},"_meta":{"progressToken":${lexeme}}}}`;
          expect(JSON.stringify(parseStrictJson(text, REQUEST))).toBe(text);
        },
      ),
      { numRuns: 500 },
    );
  });
});

test("not UTF-8, a byte order mark, or not one value: refused saying why", () => {
  expect(() => parseStrictJson(new Uint8Array([0x7b, 0xff, 0x7d]), REQUEST)).toThrow("not UTF-8");
  expect(() => parseStrictJson(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]), REQUEST)).toThrow("byte order mark");
  expect(() => parseStrictJson("{} {}", REQUEST)).toThrow("not one JSON value");
  expect(() => parseStrictJson('{"x":NaN}', REQUEST)).toThrow("not one JSON value");
});

test("a value nested more than MAX_NESTING levels below the levels read is refused, as deep as that is not", () => {
  const nested = (levels: number) => `{"params":{"arguments":{"x":${"[".repeat(levels)}${"]".repeat(levels)}}}}`;
  // `arguments` is the first level below those read, its value's arrays the rest.
  expect(() => parseStrictJson(nested(MAX_NESTING - 1), REQUEST, MAX_NESTING)).not.toThrow();
  expect(() => parseStrictJson(nested(MAX_NESTING), REQUEST, MAX_NESTING)).toThrow(`nests more than ${MAX_NESTING} levels deep`);
  expect(() => parseStrictRequest(nested(200_000))).toThrow(MalformedJson);
  // Deep at every place a request can be: a batch, params as an array, _meta, the id.
  const deep = `${"[".repeat(1000)}${"]".repeat(1000)}`;
  for (const body of [deep, `[${deep}]`, `{"params":${deep}}`, `{"params":{"_meta":{"x":${deep}}}}`, `{"id":${deep}}`])
    expect(() => parseStrictRequest(body)).toThrow(MalformedJson);
  // A server's answer is not limited (what it says is relayed; its error code is still read).
  expect(parseStrictJson(`{"error":{"code":-1,"data":${deep}}}`, { members: { error: {} } })).toMatchObject({
    error: { code: -1 },
  });
});
