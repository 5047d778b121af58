// What changed in a tool's definition, for a person deciding whether to approve it: each part of the definition
// (the ones tool pinning compares, proxy/tool-pins.ts) as text, and a line diff of the approved against the current.

/** The parts of a definition a person reads, in order: [label, text] (JSON parts pretty-printed, keys sorted). */
export function definitionParts(definition) {
  const d = definition ?? {};
  return [
    ["Title", textOf(d.title)],
    ["Description", textOf(d.description)],
    ["Input schema", jsonOf(d.inputSchema)],
    ["Output schema", jsonOf(d.outputSchema)],
    ["Annotations", jsonOf(d.annotations)],
  ];
}

const textOf = (value) => (value === undefined ? "" : typeof value === "string" ? value : jsonOf(value));
const jsonOf = (value) => (value === undefined ? "" : JSON.stringify(sorted(value), null, 2));

/** Keys in order, so that two definitions differing only in key order show no difference (as their digests). */
function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted(value[key])]),
  );
}

/** Beyond this many lines a side, the longest-common-subsequence table would be too large: shown as replaced whole. */
const MAX_LINES = 1500;

/**
 * The lines of `before` and `after` as kept (" "), removed ("-") and added ("+"), in reading order: a longest common
 * subsequence of lines, the textbook dynamic programme (small texts: a tool's description or schema).
 */
export function lineDiff(before, after) {
  const a = before === "" ? [] : before.split("\n");
  const b = after === "" ? [] : after.split("\n");
  if (a.length > MAX_LINES || b.length > MAX_LINES)
    return [...a.map((text) => ({ op: "-", text })), ...b.map((text) => ({ op: "+", text }))];
  // common[i][j]: the length of a longest common subsequence of a[i..] and b[j..].
  const common = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ op: " ", text: a[i] });
      i++;
      j++;
    } else if (i < a.length && (j === b.length || common[i + 1][j] >= common[i][j + 1])) lines.push({ op: "-", text: a[i++] });
    else lines.push({ op: "+", text: b[j++] });
  }
  return lines;
}

/** The parts that differ between two definitions, each with its line diff; `approved` null: a new tool, all added. */
export function changedParts(approved, current) {
  const before = definitionParts(approved);
  const after = definitionParts(current);
  return after
    .map(([label, text], k) => ({ label, before: approved ? before[k][1] : "", after: text }))
    .filter((part) => part.before !== part.after)
    .map((part) => ({ label: part.label, lines: lineDiff(part.before, part.after) }));
}
