import { eq } from "drizzle-orm";
import type { Store } from "../db/store";
import { webhook_cursorsPg, webhook_cursors as sqliteCursors } from "./table";

export type WebhookCursor = typeof sqliteCursors.$inferSelect;

/** Webhook delivery positions, on either store. */
export type WebhookCursorRepository = {
  find(url: string): Promise<WebhookCursor | undefined>;
  /** Inserts unless another replica did first. */
  create(cursor: WebhookCursor): Promise<void>;
  save(cursor: WebhookCursor): Promise<void>;
};

export function createWebhookCursorRepository(store: Store): WebhookCursorRepository {
  const { db } = store;
  const cursors = store.table(sqliteCursors, webhook_cursorsPg);
  return {
    find: async (url) => (await db.select().from(cursors).where(eq(cursors.url, url)).limit(1))[0],
    async create(cursor) {
      await db.insert(cursors).values(cursor).onConflictDoNothing({ target: cursors.url });
    },
    async save(cursor) {
      await db
        .update(cursors)
        .set({ last_event_id: cursor.last_event_id, attempts: cursor.attempts, next_attempt_at: cursor.next_attempt_at })
        .where(eq(cursors.url, cursor.url));
    },
  };
}
