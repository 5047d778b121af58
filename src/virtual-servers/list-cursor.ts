import type { Sealer } from "../secrets/sealer";

/**
 * The cursor of a virtual server's merged list (MCP 2025-11-25 basic/utilities/pagination: an opaque string the
 * client hands back). Stateless, so any replica continues it: it carries its own position, the last name served.
 * It is sealed (AES-256-GCM under the service's key, bound to the virtual server and the list), so a client can
 * neither read nor make one: anything else decodes to undefined, which the endpoint answers with -32602.
 */
export type ListKind = "tools" | "prompts" | "resources" | "resource_templates";
/** Where a page ended: the next page starts after this name (the merged list is in code-unit order of names). */
export type ListPosition = { after: string };

const VERSION = 1;
const context = (serverId: string, list: ListKind) => `virtual-server-cursor:${serverId}:${list}`;

export function encodeListCursor(sealer: Sealer, serverId: string, list: ListKind, position: ListPosition): string {
  const sealed = sealer.seal(JSON.stringify({ v: VERSION, after: position.after }), context(serverId, list));
  return Buffer.from(sealed, "utf8").toString("base64url");
}

/** The position of a cursor this service made for this server's list; undefined for anything else. */
export function decodeListCursor(sealer: Sealer, serverId: string, list: ListKind, cursor: unknown): ListPosition | undefined {
  // No bound of its own on the length: a position is a name or URI a listing served, and a resource's URI is as long as
  // its member made it (a page ending at one of 4,097 characters, or of 1,400 non-ASCII ones, was given a cursor it
  // then refused: found by review). Only a cursor this service sealed opens; the message size bounds what is tried.
  if (typeof cursor !== "string" || cursor.length === 0) return undefined;
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  let plain: string;
  try {
    plain = sealer.open(Buffer.from(cursor, "base64url").toString("utf8"), context(serverId, list));
  } catch {
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(plain);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { v, after } = value as { v?: unknown; after?: unknown };
  if (v !== VERSION || typeof after !== "string") return undefined;
  return { after };
}
