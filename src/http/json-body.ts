import { BadRequest, bodyTooLarge } from "../http-errors/errors";
import { readCapped } from "./read-capped";

/** DESIGN.md: API request bodies are limited to 1 MiB; the MCP proxy streams and has its own cap. */
export const MAX_API_BODY_BYTES = 1024 * 1024;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/**
 * Parses JSON bodies within the limit; malformed JSON is a 400 that says where it broke. A local
 * `onParse` of the API's route groups: the MCP proxy's bodies are streamed, never parsed.
 */
export async function parseJsonBody({ request, contentType }: { request: Request; contentType: string }) {
  if (!JSON_TYPE.test(contentType)) return;
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_API_BODY_BYTES) throw tooLarge();
  const bytes = await readCapped(request.body, MAX_API_BODY_BYTES);
  if (!bytes) throw tooLarge();
  const text = bytes.toString("utf8");
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new BadRequest(`The request body is not valid JSON: ${(e as Error).message}`);
  }
}

const tooLarge = () => bodyTooLarge(MAX_API_BODY_BYTES);
