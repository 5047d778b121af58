import { and, desc, eq, gte, lt, lte, type SQL } from "drizzle-orm";
import { rowPlaceholders } from "../db/rows";
import type { Store } from "../db/store";
import { audit_recordsPg, audit_records as sqliteAudit } from "./table";

export type AuditRow = typeof sqliteAudit.$inferSelect;
export type AuditFilter = {
  userId?: string;
  connectorId?: string;
  virtualServerId?: string;
  method?: string;
  since?: number;
  until?: number;
};

/** Audit records, on either store. */
export type AuditRepository = {
  /** Many records (the writer's batch): on SQLite in one transaction; a record already there is left as it is. */
  insertMany(rows: AuditRow[]): Promise<void>;
  /** Newest first, after the cursor's id (UUIDv7 order is time order). */
  page(filter: AuditFilter, limit: number, beforeId: string | undefined): Promise<AuditRow[]>;
  deleteBefore(at: number): Promise<number>;
  /** Keeps the newest `max` records; how many went. */
  trimTo(max: number): Promise<number>;
};

/** Binds a captured value's ciphertext to its record. */
export const auditSealContext = (id: string) => `audit_records/${id}/captured`;

/** The columns of an audit record, in the order the writer's multi-row insert binds them. */
export const AUDIT_COLUMNS = [
  "id",
  "at",
  "user_id",
  "credential",
  "connector_id",
  "method",
  "name",
  "outcome",
  "error_code",
  "http_status",
  "duration_ms",
  "request_bytes",
  "response_bytes",
  "captured",
  "virtual_server_id",
] as const;

export function createAuditRepository(store: Store): AuditRepository {
  const { db } = store;
  const audit = store.table(sqliteAudit, audit_recordsPg);
  const insertRows = store.prepareRows("audit_insert", (count) =>
    db.insert(audit).values(rowPlaceholders(AUDIT_COLUMNS, count)).onConflictDoNothing(),
  );
  return {
    insertMany: (rows) => insertRows(rows),
    async page(filter, limit, beforeId) {
      const conditions: SQL[] = [];
      if (filter.userId !== undefined) conditions.push(eq(audit.user_id, filter.userId));
      if (filter.connectorId !== undefined) conditions.push(eq(audit.connector_id, filter.connectorId));
      if (filter.virtualServerId !== undefined) conditions.push(eq(audit.virtual_server_id, filter.virtualServerId));
      if (filter.method !== undefined) conditions.push(eq(audit.method, filter.method));
      if (filter.since !== undefined) conditions.push(gte(audit.at, filter.since));
      if (filter.until !== undefined) conditions.push(lte(audit.at, filter.until));
      if (beforeId !== undefined) conditions.push(lt(audit.id, beforeId));
      return db
        .select()
        .from(audit)
        .where(and(...conditions))
        .orderBy(desc(audit.id))
        .limit(limit);
    },
    deleteBefore: async (at) => (await db.delete(audit).where(lt(audit.at, at)).returning({ id: audit.id })).length,
    async trimTo(max) {
      const [oldestKept] = await db
        .select({ id: audit.id })
        .from(audit)
        .orderBy(desc(audit.id))
        .limit(1)
        .offset(max - 1);
      if (!oldestKept) return 0;
      return (await db.delete(audit).where(lt(audit.id, oldestKept.id)).returning({ id: audit.id })).length;
    },
  };
}
