import { t } from "elysia";
import type { PageCursor } from "../db/pages";
import { invalidField } from "../http-errors/errors";

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 50;

/** `limit` and `cursor` of a newest-first listing (docs/interface.md §2): connectors, virtual servers. */
export const ListQuery = t.Object({
  // A string of decimal digits, so that "0x10", "1e1" or " 5" are refused rather than read as numbers.
  limit: t.Optional(
    t.String({
      pattern: `^(?:${MAX_PAGE_SIZE}|[1-9][0-9]?)$`,
      error: `must be a whole number from 1 to ${MAX_PAGE_SIZE}`,
      description: `Page size, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
      // Shown in OpenAPI as the integer it is (docs/plugin.ts); checked as digits, so "1e1" or "0x10" are refused.
      "x-integer": { minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
    }),
  ),
  cursor: t.Optional(t.String({ maxLength: 200, description: "next_cursor of the previous page" })),
});
export type ListQuery = typeof ListQuery.static;

/** `next_cursor` of a page: what `cursor` takes for the next one. */
export const NextCursor = t.Union([t.String(), t.Null()], {
  description: "Pass as `cursor` for the next page; null on the last",
});

/** Opaque page cursors: base64url of `created_at.id` of the last item of the previous page. */
export function encodeCursor(cursor: PageCursor): string {
  return Buffer.from(`${cursor.created_at}.${cursor.id}`).toString("base64url");
}

export function decodeCursor(value: string): PageCursor | undefined {
  const text = Buffer.from(value, "base64url").toString("utf8");
  const match = /^(\d{1,16})\.([0-9a-f-]{36})$/.exec(text);
  return match ? { created_at: Number(match[1]), id: match[2]! } : undefined;
}

/**
 * One page of a newest-first listing: `limit` rows after the query's cursor (422 for a cursor that is not one of ours),
 * shown with `view`, and the cursor of the next page (one row more is read to know whether there is one).
 */
export async function readPage<Row extends PageCursor, Item>(
  query: ListQuery,
  read: (limit: number, after: PageCursor | undefined) => Promise<Row[]>,
  view: (rows: Row[]) => Item[] | Promise<Item[]>,
): Promise<{ items: Item[]; next_cursor: string | null }> {
  const limit = query.limit === undefined ? DEFAULT_PAGE_SIZE : Number(query.limit);
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  if (query.cursor !== undefined && !after) throw invalidField("query.cursor", "is not a cursor from this API");
  const found = await read(limit + 1, after);
  const page = found.slice(0, limit);
  const last = page.at(-1);
  return { items: await view(page), next_cursor: found.length > limit && last ? encodeCursor(last) : null };
}
