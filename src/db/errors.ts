/**
 * What a failure of the store means to a caller, when it is the store's and not the request's: the disk is full,
 * failed, or the database is held by another writer. The answer is a 503 (try again later) naming it — never a 500,
 * and never a half-written record: SQLite rolls the statement back.
 */
export function storageFailure(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | undefined)?.code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return undefined;
  if (code === "SQLITE_FULL") return "The service cannot store anything now: its disk is full";
  if (code.startsWith("SQLITE_IOERR")) return "The service cannot read or write its database now: the disk failed";
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "The database is busy: try again in a moment";
  if (code.startsWith("SQLITE_READONLY")) return "The service cannot store anything now: its database is read-only";
  return undefined;
}
