import { Elysia } from "elysia";
import { BadRequest, bodyTooLarge, invalidField, UnsupportedMediaType } from "../http-errors/errors";
import { readRequestCapped } from "./read-capped";

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/** How deep API JSON may nest (objects and arrays): far beyond any real body, far below what costs time or stack. */
export const MAX_JSON_DEPTH = 32;

export type ApiBodyOptions = {
  /** API__MAX_BODY_BYTES. */
  maxBytes: number;
  /**
   * Checks the request's credentials and throws 401. Every API route with a body is authenticated but the console's
   * sign-in, whose body is the credentials (`null` there).
   */
  authenticate: ((request: Request) => Promise<unknown>) | null;
};

/**
 * The API's body parser, the one place its limits are enforced: the caller's credentials are checked before a byte
 * of the body is read; a body must be JSON (else 415); a declared length over API__MAX_BODY_BYTES is refused before
 * reading and an undeclared one is counted as it arrives (413); nesting deeper than MAX_JSON_DEPTH is refused before
 * parsing (422); malformed JSON is a 400 that says where it broke; U+0000 in any string is a 422 naming the field. Used by the API's route groups only: the relays
 * (MCP, A2A) stream their bodies under their own limit.
 */
export function apiBodyPlugin({ maxBytes, authenticate }: ApiBodyOptions) {
  const tooLarge = () => bodyTooLarge(maxBytes, "API__MAX_BODY_BYTES");
  const parse = async ({ request, contentType }: { request: Request; contentType: string }): Promise<unknown> => {
    await authenticate?.(request);
    const declared = request.headers.get("content-length");
    if (!JSON_TYPE.test(contentType)) {
      if (request.body === null || declared === "0") return {};
      throw new UnsupportedMediaType(
        `The API takes JSON: send the body with Content-Type: application/json${contentType ? ` (not ${contentType.split(";")[0]})` : ""}`,
      );
    }
    const bytes = await readRequestCapped(request, maxBytes);
    if (!bytes) throw tooLarge();
    const text = bytes.toString("utf8");
    if (text.trim() === "") return {};
    if (nestingExceeds(text, MAX_JSON_DEPTH)) throw invalidField("body", `nests deeper than ${MAX_JSON_DEPTH} levels`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (e) {
      throw new BadRequest(`The request body is not valid JSON: ${(e as Error).message}`);
    }
    // Text in PostgreSQL cannot hold U+0000; refused here, for both stores, so that they keep the same data.
    if (text.includes("\\u0000")) {
      const field = nulAt(body, "body");
      if (field) throw invalidField(field, "contains U+0000 (NUL), which is not accepted");
    }
    return body;
  };
  // "application/json" after the parser is for the OpenAPI document (the parser always answers, so Elysia's own
  // JSON parser never runs): it shows each route's body schema as JSON, the schema that validates it.
  return new Elysia({ name: "api-body", seed: [maxBytes, authenticate ? "authenticated" : "anonymous"] }).guard({
    as: "scoped",
    parse: [parse, "application/json"],
  });
}
export type ApiBodyPlugin = ReturnType<typeof apiBodyPlugin>;

/**
 * Whether JSON text nests objects and arrays deeper than `max` ([RFC 8259 §2](https://www.rfc-editor.org/rfc/rfc8259#section-2): brackets inside strings do not count),
 * in one pass without parsing: deep nesting costs the parser and the validators quadratic time and stack.
 */
export function nestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** Where a parsed JSON value holds U+0000 in a string or a key (a dotted path), else undefined. */
function nulAt(value: unknown, path: string): string | undefined {
  if (typeof value === "string") return value.includes("\u0000") ? path : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    const at = Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`;
    if (key.includes("\u0000")) return at;
    const found = nulAt(child, at);
    if (found) return found;
  }
  return undefined;
}

/**
 * The relays' routes (MCP, A2A): the framework never reads the body — the relay streams it upstream, or reads it
 * itself under its own limits where it must decide on a message (the MCP proxy's audit trail, tool policy) — yet
 * OpenAPI shows it as JSON. The parser answers null at once; the media type is for the document.
 */
export const RELAYED_JSON_BODY: [() => null, "application/json"] = [() => null, "application/json"];
