import { expect, test } from "bun:test";
import { wholeOutcome } from "../../src/proxy/answer-outcome";

/** The answer's bytes as a view into a larger buffer (as Buffer.concat and Bun's pooled buffers hand them out). */
const viewOf = (before: string, answer: string, after: string) => {
  const all = new TextEncoder().encode(before + answer + after);
  const start = new TextEncoder().encode(before).byteLength;
  return all.subarray(start, start + new TextEncoder().encode(answer).byteLength);
};

test('an error is told by the "error" member, and only within the answer\'s own bytes', () => {
  const error = '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}';
  const result = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"no \\"error\\" here"}]}}';
  expect(wholeOutcome(viewOf("", error, ""), false)).toEqual({ errorCode: -32602, bytes: error.length });
  expect(wholeOutcome(viewOf("", result, ""), false)).toEqual({ errorCode: null, bytes: result.length });
  // `"error"` just outside the view (the rest of a pooled buffer) is not the answer's.
  const plain = '{"jsonrpc":"2.0","id":1,"result":{}}';
  expect(wholeOutcome(viewOf('"error"', plain, '"error"'), false)).toEqual({ errorCode: null, bytes: plain.length });
  expect(wholeOutcome(viewOf('{"x":1}', error, '"error"'), false).errorCode).toBe(-32602);
});
