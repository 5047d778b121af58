import type { PageCursor } from "./repository";

/** Opaque page cursors: base64url of `created_at.id` of the last item of the previous page. */
export function encodeCursor(cursor: PageCursor): string {
  return Buffer.from(`${cursor.created_at}.${cursor.id}`).toString("base64url");
}

export function decodeCursor(value: string): PageCursor | undefined {
  const text = Buffer.from(value, "base64url").toString("utf8");
  const match = /^(\d{1,16})\.([0-9a-f-]{36})$/.exec(text);
  return match ? { created_at: Number(match[1]), id: match[2]! } : undefined;
}
