import { DrizzleQueryError } from "drizzle-orm/errors";

/**
 * The driver's own error under Drizzle's wrapper. Drizzle's message carries the query's parameters (digests, sealed
 * values, what a user typed), so only the driver's error is ever described or logged.
 */
export function driverError(e: unknown): unknown {
  let error = e;
  while (error instanceof DrizzleQueryError && error.cause !== undefined) error = error.cause;
  return error;
}

type DriverError = { code?: unknown; errno?: unknown };

/**
 * What a failure of the store means to a caller, when it is the store's and not the request's: the disk is full or
 * failed, the database is busy, read-only or out of reach. The answer is a 503 (try again later) naming it — never
 * a 500, and never a half-written record: both stores roll the statement (or its transaction) back.
 */
export function storageFailure(e: unknown): string | undefined {
  const { code, errno } = (driverError(e) ?? {}) as DriverError;
  if (typeof code !== "string") return undefined;
  if (code.startsWith("SQLITE_")) {
    if (code === "SQLITE_FULL") return "The service cannot store anything now: its disk is full";
    if (code.startsWith("SQLITE_IOERR")) return "The service cannot read or write its database now: the disk failed";
    if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "The database is busy: try again in a moment";
    if (code.startsWith("SQLITE_READONLY")) return "The service cannot store anything now: its database is read-only";
    return undefined;
  }
  // Bun's PostgreSQL client: its own codes for the connection, the server's SQLSTATE in errno.
  if (/^ERR_POSTGRES_(CONNECTION|IDLE_TIMEOUT|LIFETIME_TIMEOUT|TLS)/.test(code))
    return "The service cannot reach its database now";
  if (code !== "ERR_POSTGRES_SERVER_ERROR" || typeof errno !== "string") return undefined;
  // [PostgreSQL Appendix A](https://www.postgresql.org/docs/current/errcodes-appendix.html): error code classes.
  if (errno === "53100") return "The service cannot store anything now: the database's disk is full";
  if (errno.startsWith("53")) return "The database has run out of resources (connections or memory): try again in a moment";
  if (errno.startsWith("08") || errno.startsWith("57P")) return "The service cannot reach its database now";
  if (errno === "40001" || errno === "40P01" || errno === "55P03") return "The database is busy: try again in a moment";
  if (errno === "25006") return "The service cannot store anything now: its database is read-only";
  return undefined;
}

/**
 * A value the store cannot hold, caught by the store itself: PostgreSQL text cannot contain U+0000 (SQLSTATE 22021,
 * 22P05). Request bodies are checked before (http/json-body.ts); this covers what reaches the store otherwise (a
 * path segment, a user name from a Basic header).
 */
export function storageRefusal(e: unknown): string | undefined {
  const { code, errno } = (driverError(e) ?? {}) as DriverError;
  if (code === "ERR_POSTGRES_SERVER_ERROR" && (errno === "22021" || errno === "22P05")) {
    return "The request contains a character that cannot be stored (U+0000, NUL)";
  }
  return undefined;
}
