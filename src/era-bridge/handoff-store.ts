import { and, eq, inArray, isNull, lt } from "drizzle-orm";
import type { Store } from "../db/store";
import type { Sealer } from "../secrets/sealer";
import { parked_handoffs as sqliteHandoffs, parked_handoffsPg } from "./table";

/** Binds a sealed retry or answer to its row and column (a copy elsewhere does not open). */
export const handoffSealContext = (id: string, column: "message" | "answer") => `parked_handoffs/${id}/${column}`;

/** A retry as the holding replica takes it. */
export type TakenHandoff = { id: string; bridge: string; message: string; abandoned: boolean };

/**
 * The retries of parked calls handed over between replicas (table.ts `parked_handoffs`, handoffs.ts): the retry and
 * the answer sealed at rest (a retry's inputResponses are what the user typed or chose, an answer is a tool's result).
 */
export function createHandoffStore(store: Store, sealer: Sealer) {
  const { db } = store;
  const rows = store.table(sqliteHandoffs, parked_handoffsPg);

  return {
    async insert(id: string, holder: string, bridge: string, message: string, at: number): Promise<void> {
      await db.insert(rows).values({
        id,
        holder,
        bridge,
        message: sealer.seal(message, handoffSealContext(id, "message")),
        created_at: at,
      });
    },

    /** The retries handed to `holder` and not taken yet, taken now: one statement, so two polls never take one twice. */
    async take(holder: string, at: number): Promise<TakenHandoff[]> {
      const taken = await db
        .update(rows)
        .set({ taken_at: at })
        .where(and(eq(rows.holder, holder), isNull(rows.taken_at)))
        .returning({ id: rows.id, bridge: rows.bridge, message: rows.message, abandoned_at: rows.abandoned_at });
      return taken.map((row) => ({
        id: row.id,
        bridge: row.bridge,
        message: sealer.open(row.message, handoffSealContext(row.id, "message")),
        abandoned: row.abandoned_at !== null,
      }));
    },

    /** The holder's answer, unless the retry was abandoned meanwhile (then false). */
    async answer(id: string, answer: string): Promise<boolean> {
      const written = await db
        .update(rows)
        .set({ answer: sealer.seal(answer, handoffSealContext(id, "answer")) })
        .where(and(eq(rows.id, id), isNull(rows.abandoned_at)))
        .returning({ id: rows.id });
      return written.length > 0;
    },

    /** Of `ids`, those whose retrying client still waits (not abandoned, not deleted). */
    async waiting(ids: string[]): Promise<Set<string>> {
      const found = await db
        .select({ id: rows.id })
        .from(rows)
        .where(and(inArray(rows.id, ids), isNull(rows.abandoned_at)));
      return new Set(found.map((row) => row.id));
    },

    /** Where the retry is: taken or not, and the answer once there is one; undefined when the row is gone. */
    async read(id: string): Promise<{ taken: boolean; answer?: string } | undefined> {
      const [row] = await db.select({ taken_at: rows.taken_at, answer: rows.answer }).from(rows).where(eq(rows.id, id)).limit(1);
      if (!row) return undefined;
      return {
        taken: row.taken_at !== null,
        ...(row.answer !== null && { answer: sealer.open(row.answer, handoffSealContext(id, "answer")) }),
      };
    },

    /** The retrying client went away or stopped waiting: its holder cancels the call. */
    async abandon(id: string, at: number): Promise<void> {
      await db.update(rows).set({ abandoned_at: at }).where(eq(rows.id, id));
    },

    /** Takes back a retry nobody took; false when its holder took it meanwhile. */
    async withdraw(id: string): Promise<boolean> {
      return (
        (
          await db
            .delete(rows)
            .where(and(eq(rows.id, id), isNull(rows.taken_at)))
            .returning({ id: rows.id })
        ).length > 0
      );
    },

    async delete(ids: string[]): Promise<void> {
      if (ids.length > 0) await db.delete(rows).where(inArray(rows.id, ids));
    },

    /** Rows written before `before` (their replica died waiting, or abandoned them to a holder that died): how many. */
    async sweep(before: number): Promise<number> {
      return (await db.delete(rows).where(lt(rows.created_at, before)).returning({ id: rows.id })).length;
    },
  };
}
export type HandoffStore = ReturnType<typeof createHandoffStore>;
