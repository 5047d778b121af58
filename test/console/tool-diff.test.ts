import { expect, test } from "bun:test";
// @ts-expect-error: the console's modules are plain JavaScript without declarations
import { changedParts, lineDiff } from "../../src/console/assets/tool-diff.js";

// The console's diff of a changed tool (tool-diff.js, pure): lines kept, removed and added in reading order, and only
// the parts of a definition that differ — key order in a schema is no difference, as it is none to the digest.
test("a line diff keeps the common lines and puts what was removed before what was added", () => {
  expect(lineDiff("a\nb\nc", "a\nx\nc\nd")).toEqual([
    { op: " ", text: "a" },
    { op: "-", text: "b" },
    { op: "+", text: "x" },
    { op: " ", text: "c" },
    { op: "+", text: "d" },
  ]);
  expect(lineDiff("", "new")).toEqual([{ op: "+", text: "new" }]);
  expect(lineDiff("same", "same")).toEqual([{ op: " ", text: "same" }]);
});

test("only the changed parts: a schema's key order is no change, an added annotation is", () => {
  const approved = { name: "t", description: "Reads", inputSchema: { type: "object", properties: { q: { type: "string" } } } };
  const current = {
    name: "t",
    description: "Reads",
    inputSchema: { properties: { q: { type: "string" } }, type: "object" },
    annotations: { destructiveHint: true },
  };
  const parts = changedParts(approved, current);
  expect(parts.map((p: { label: string }) => p.label)).toEqual(["Annotations"]);
  expect(parts[0].lines.every((l: { op: string }) => l.op === "+")).toBe(true);
  expect(changedParts(null, { name: "n", description: "New tool" })).toEqual([
    { label: "Description", lines: [{ op: "+", text: "New tool" }] },
  ]);
});
