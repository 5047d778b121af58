import { Elysia } from "elysia";
import { BadRequest, bodyTooLarge } from "../http-errors/errors";
import { readCapped } from "./read-capped";

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/**
 * The API's JSON body parser, the one place API__MAX_BODY_BYTES is enforced (DESIGN.md: 1 MiB by default):
 * a declared length over it is refused before reading, an undeclared one is counted as it arrives. Malformed
 * JSON is a 400 that says where it broke. Used by the API's route groups only: the relays (MCP, A2A) stream
 * their bodies under their own limit.
 */
export function jsonBodyPlugin(maxBytes: number) {
  const tooLarge = () => bodyTooLarge(maxBytes, "API__MAX_BODY_BYTES");
  return new Elysia({ name: "json-body", seed: maxBytes }).onParse({ as: "scoped" }, async ({ request, contentType }) => {
    if (!JSON_TYPE.test(contentType)) return;
    if (Number(request.headers.get("content-length") ?? "0") > maxBytes) throw tooLarge();
    const bytes = await readCapped(request.body, maxBytes);
    if (!bytes) throw tooLarge();
    const text = bytes.toString("utf8");
    if (text.trim() === "") return {};
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new BadRequest(`The request body is not valid JSON: ${(e as Error).message}`);
    }
  });
}
export type JsonBodyPlugin = ReturnType<typeof jsonBodyPlugin>;
