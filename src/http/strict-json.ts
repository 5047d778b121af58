/**
 * JSON as [RFC 8259](https://www.rfc-editor.org/rfc/rfc8259) has it and no more, for every body the proxy decides on
 * (tool policy, pinning, audit): a server behind the proxy may read what JSON.parse refuses (Python's json takes
 * `NaN` and UTF-16; Go's encoding/json matches member names case-insensitively), so a body read one way here and
 * another way there would let a denied tool run. What passes is exactly one UTF-8 JSON value, without a byte order
 * mark, whose objects at the levels the proxy reads hold no member twice — not even as a case variant. The proxy then
 * sends on the value it checked, serialised again, never the bytes it was given.
 */

export class MalformedJson extends Error {}

/**
 * The objects of a message whose member names are checked: this one (every node is checked), the members named under
 * `members` in turn, and with `elements` every element of an array found here.
 */
export type Levels = { members?: Record<string, Levels>; elements?: Levels };

/** The levels of a JSON-RPC message that are read: the message, its params, and their `_meta` (progress tokens). */
const MESSAGE_LEVELS: Levels = { members: { params: { members: { _meta: {} } } } };
/** A request body: one message, or (before 2025-06-18) a batch of them. */
const REQUEST_LEVELS: Levels = { ...MESSAGE_LEVELS, elements: MESSAGE_LEVELS };

// ignoreBOM: the decoder keeps a byte order mark, so it is refused below rather than skipped.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

// JSON.rawJSON (ES2026) is in Bun but not yet in TypeScript's lib.
declare global {
  interface JSON {
    rawJSON(text: string): unknown;
  }
}

/** Keeps the exact lexeme of every number that would come out changed (JSON.rawJSON, TC39 "JSON.parse source text access"). */
function keepLexeme(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === "number" && context?.source !== undefined && String(value) !== context.source
    ? JSON.rawJSON(context.source)
    : value;
}

/** Parses `input` (the body's bytes, or a text already decoded) fail-closed; throws MalformedJson saying why. */
export function parseStrictJson(input: Uint8Array | string, levels: Levels, maxNesting = Infinity): unknown {
  let text: string;
  if (typeof input === "string") text = input;
  else {
    try {
      text = utf8.decode(input);
    } catch {
      throw new MalformedJson("the body is not UTF-8 (RFC 8259 §8.1)");
    }
  }
  // RFC 8259 §8.1: "Implementations MUST NOT add a byte order mark".
  if (text.charCodeAt(0) === 0xfeff) throw new MalformedJson("the body starts with a byte order mark (RFC 8259 §8.1)");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new MalformedJson(`the body is not one JSON value (RFC 8259 §2): ${(e as Error).message}`);
  }
  const scanned: Scan = { text, altered: false, maxNesting };
  scan(scanned, space(text, 0), levels);
  // A number JSON.stringify would write otherwise: read again, keeping every such lexeme (the reviver is slow: only then).
  return scanned.altered ? JSON.parse(text, keepLexeme as Parameters<typeof JSON.parse>[1]) : value;
}

/**
 * Go folds a member name by Unicode simple case folding (`ToUpper(ToLower(r))`): "ſ" (U+017F) is "S", "K" (U+212A)
 * "K", "İ" (U+0130) and "ı" (U+0131) "I". Names that fold alike are one name to such a server.
 */
function foldCode(c: number): number {
  if (c >= 97 && c <= 122) return c - 32;
  if (c < 128) return c;
  if (c === 0x17f) return 83;
  if (c === 0x212a) return 75;
  if (c === 0x130 || c === 0x131) return 73;
  const folded = String.fromCharCode(c).toLowerCase().toUpperCase();
  return folded.length === 1 ? folded.charCodeAt(0) : c;
}

/** Whether two names of one length fold alike (simple folding keeps a name's length). */
function foldAlike(a: string, b: string): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y && foldCode(x) !== foldCode(y)) return false;
  }
  return true;
}

const QUOTE = 34;
const MINUS = 45;
const ZERO = 48;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const BACKSLASH = 92;

/*
 * The scan below walks, once, a text JSON.parse has accepted: it need not check the grammar, only find member names
 * at the levels asked for, skip everything else quickly (strings by indexOf), and see whether a number would come out
 * of JSON.parse and JSON.stringify changed.
 */
type Scan = { text: string; altered: boolean; maxNesting: number };

const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;
const startsNumber = (c: number) => c === MINUS || (c >= ZERO && c <= 57);

function space(text: string, i: number): number {
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** From an opening quote to just past its closing one. */
function skipString(text: string, i: number): number {
  for (let from = i + 1; ;) {
    const quote = text.indexOf('"', from);
    let escapes = 0;
    while (text.charCodeAt(quote - 1 - escapes) === BACKSLASH) escapes++;
    if (escapes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/**
 * Past a number; marks the scan when its lexeme would not survive: 16 digits or more (past 2^53 digits are lost),
 * a fraction or an exponent (`1.0` is written `1`, `1e400` `null`), `-0`. Short integers, the usual, are not looked at.
 */
function skipNumber(s: Scan, i: number): number {
  const { text } = s;
  const start = i;
  let plain = true;
  for (; ; i++) {
    const c = text.charCodeAt(i);
    if (c >= ZERO && c <= 57) continue;
    if (c === MINUS || c === 43) continue;
    if (c === 46 || c === 101 || c === 69) {
      plain = false;
      continue;
    }
    break;
  }
  if (
    !s.altered &&
    (!plain || i - start >= 16 || (i - start === 2 && text.charCodeAt(start) === MINUS && text.charCodeAt(start + 1) === ZERO))
  ) {
    const lexeme = text.slice(start, i);
    if (String(Number(lexeme)) !== lexeme) s.altered = true;
  }
  return i;
}

/**
 * How deep a value of a client's message may nest below the levels read. The MCP messages people send nest a few dozen
 * levels at most (a JSON Schema in a tool's arguments); what is deeper is refused here, where it is cheap, rather than
 * overflowing the stack of whatever walks it next (JSON.stringify, sending it on, overflows at a few thousand levels
 * under Bun). A server's answer is not limited: what it says is relayed, and its outcome still read.
 */
export const MAX_NESTING = 100;

/** A client's request body (one message or a batch), read as every MCP URL of the service reads one. */
export const parseStrictRequest = (input: Uint8Array | string): unknown => parseStrictJson(input, REQUEST_LEVELS, MAX_NESTING);

/** From `{` or `[` to just past its match. */
function skipContainer(s: Scan, i: number): number {
  const { text } = s;
  let depth = 0;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = skipString(text, i);
    else if (startsNumber(c)) i = skipNumber(s, i);
    else {
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (++depth > s.maxNesting) throw new MalformedJson(`a value nests more than ${s.maxNesting} levels deep`);
      } else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --depth === 0) return i + 1;
      i++;
    }
  }
}

function skipValue(s: Scan, i: number): number {
  const c = s.text.charCodeAt(i);
  if (c === QUOTE) return skipString(s.text, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) return skipContainer(s, i);
  if (startsNumber(c)) return skipNumber(s, i);
  return i + (c === 110 || c === 116 ? 4 : 5); // null, true; false
}

/** The member name in the string from `start` to `end` (its quotes), as JSON.parse decodes it. */
function memberName(text: string, start: number, end: number): string {
  const raw = text.slice(start + 1, end - 1);
  return raw.includes("\\") ? (JSON.parse(text.slice(start, end)) as string) : raw;
}

/**
 * Where the value of the member `name` of the object in `text` (a text JSON.parse accepted) is: [start, end) in `text`.
 * Undefined when the text is not an object, has no such member, or has it more than once (RFC 8259 §4: which one a
 * reader takes then differs). Names compare as JSON.parse decodes them (`"\u0069d"` is `id`).
 */
export function memberSpan(text: string, name: string): [number, number] | undefined {
  const s: Scan = { text, altered: false, maxNesting: Infinity };
  let i = space(text, 0);
  if (text.charCodeAt(i) !== OPEN_OBJECT) return undefined;
  i = space(text, i + 1);
  if (text.charCodeAt(i) === CLOSE_OBJECT) return undefined;
  let found: [number, number] | undefined;
  for (;;) {
    const end = skipString(text, i);
    const key = memberName(text, i, end);
    i = space(text, space(text, end) + 1);
    const after = skipValue(s, i);
    if (key === name) {
      if (found) return undefined;
      found = [i, after];
    }
    i = space(text, after);
    if (text.charCodeAt(i) === CLOSE_OBJECT) return found;
    i = space(text, i + 1);
  }
}

/** Scans the value at `i` (its member names checked as `levels` says, if given); answers the index just past it. */
function scan(s: Scan, i: number, levels: Levels | undefined): number {
  if (!levels) return skipValue(s, i);
  const { text } = s;
  const c = text.charCodeAt(i);
  if (c === OPEN_ARRAY && levels.elements) {
    i = space(text, i + 1);
    if (text.charCodeAt(i) === CLOSE_ARRAY) return i + 1;
    for (;;) {
      i = space(text, scan(s, i, levels.elements));
      if (text.charCodeAt(i) === CLOSE_ARRAY) return i + 1;
      i = space(text, i + 1);
    }
  }
  if (c !== OPEN_OBJECT) return skipValue(s, i);
  const names: string[] = [];
  i = space(text, i + 1);
  if (text.charCodeAt(i) === CLOSE_OBJECT) return i + 1;
  for (;;) {
    const end = skipString(text, i);
    const name = memberName(text, i, end);
    for (const earlier of names) {
      // RFC 8259 §4: names SHOULD be unique; where they are not, "implementations differ" in which one they read.
      if (earlier.length === name.length && foldAlike(earlier, name)) {
        throw new MalformedJson(
          earlier === name
            ? `the member ${JSON.stringify(name)} appears twice in one object (RFC 8259 §4)`
            : `the members ${JSON.stringify(earlier)} and ${JSON.stringify(name)} differ only in case, and some servers read them as one`,
        );
      }
    }
    names.push(name);
    i = space(text, space(text, end) + 1);
    const child = levels.members && Object.hasOwn(levels.members, name) ? levels.members[name] : undefined;
    i = space(text, scan(s, i, child));
    if (text.charCodeAt(i) === CLOSE_OBJECT) return i + 1;
    i = space(text, i + 1);
  }
}
