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

// ignoreBOM: the decoder keeps a byte order mark, so it is refused below rather than skipped.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

type RawJson = (text: string) => unknown;
const rawJSON = (JSON as unknown as { rawJSON: RawJson }).rawJSON;

/**
 * A number whose lexeme JSON.stringify would not give back: an integer of 16 digits or more (past 2^53 it loses
 * digits), a fraction or exponent (`1.0` becomes `1`, `1e400` null), `-0`. Texts without one skip the reviver.
 */
const ALTERED_NUMBER = /\d{16}|\d[.eE]|-0/;

/** Keeps the exact lexeme of every number that would come out changed (JSON.rawJSON, TC39 "JSON.parse source text access"). */
function keepLexeme(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === "number" && context?.source !== undefined && String(value) !== context.source ? rawJSON(context.source) : value;
}

/** Parses `input` (the body's bytes, or a text already decoded) fail-closed; throws MalformedJson saying why. */
export function parseStrictJson(input: Uint8Array | string, levels: Levels): unknown {
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
    value = ALTERED_NUMBER.test(text) ? JSON.parse(text, keepLexeme as Parameters<typeof JSON.parse>[1]) : JSON.parse(text);
  } catch (e) {
    throw new MalformedJson(`the body is not one JSON value (RFC 8259 §2): ${(e as Error).message}`);
  }
  checkMembers(text, levels);
  return value;
}

/**
 * Go folds a member name by Unicode simple case folding (`ToUpper(ToLower(r))`): "ſ" (U+017F) is "S", "K" (U+212A)
 * "K", "İ" (U+0130) "I". Names that fold alike are one name to such a server.
 */
function fold(name: string): string {
  if (/^[\x00-\x7f]*$/.test(name)) return name.toUpperCase();
  let folded = "";
  for (const ch of name) folded += ch === "\u0130" ? "I" : ch.toLowerCase().toUpperCase();
  return folded;
}

const QUOTE = 34;
const COMMA = 44;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const BACKSLASH = 92;

/*
 * The scan below walks a text JSON.parse has accepted: it need not check the grammar, only find member names at the
 * levels asked for and skip everything else quickly.
 */

const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

function space(text: string, i: number): number {
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** From an opening quote to just past its closing one. */
function skipString(text: string, i: number): number {
  for (let from = i + 1; ; ) {
    const quote = text.indexOf('"', from);
    let escapes = 0;
    while (text.charCodeAt(quote - 1 - escapes) === BACKSLASH) escapes++;
    if (escapes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** From `{` or `[` to just past its match, strings skipped whole. */
function skipContainer(text: string, i: number): number {
  let depth = 0;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = skipString(text, i);
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (--depth === 0) return i + 1;
    }
    i++;
  }
}

function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return skipString(text, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) return skipContainer(text, i);
  while (i < text.length) {
    const d = text.charCodeAt(i);
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || isSpace(d)) break;
    i++;
  }
  return i;
}

function checkMembers(text: string, levels: Levels): void {
  scan(text, space(text, 0), levels);
}

/** Scans the value at `i` (checked as `levels` says, if given); answers the index just past it. */
function scan(text: string, i: number, levels: Levels | undefined): number {
  if (!levels) return skipValue(text, i);
  const c = text.charCodeAt(i);
  if (c === OPEN_ARRAY && levels.elements) {
    i = space(text, i + 1);
    if (text.charCodeAt(i) === CLOSE_ARRAY) return i + 1;
    for (;;) {
      i = space(text, scan(text, i, levels.elements));
      if (text.charCodeAt(i) === CLOSE_ARRAY) return i + 1;
      i = space(text, i + 1);
    }
  }
  if (c !== OPEN_OBJECT) return skipValue(text, i);
  const seen = new Map<string, string>();
  i = space(text, i + 1);
  if (text.charCodeAt(i) === CLOSE_OBJECT) return i + 1;
  for (;;) {
    const end = skipString(text, i);
    const quoted = text.slice(i, end);
    const name = quoted.includes("\\") ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
    const folded = fold(name);
    const earlier = seen.get(folded);
    if (earlier !== undefined) {
      // RFC 8259 §4: names SHOULD be unique; where they are not, "implementations differ" in which one they read.
      throw new MalformedJson(
        earlier === name
          ? `the member ${JSON.stringify(name)} appears twice in one object (RFC 8259 §4)`
          : `the members ${JSON.stringify(earlier)} and ${JSON.stringify(name)} differ only in case, and some servers read them as one`,
      );
    }
    seen.set(folded, name);
    i = space(text, space(text, end) + 1);
    const child = levels.members && Object.hasOwn(levels.members, name) ? levels.members[name] : undefined;
    i = space(text, scan(text, i, child));
    if (text.charCodeAt(i) === CLOSE_OBJECT) return i + 1;
    i = space(text, i + 1);
  }
}
