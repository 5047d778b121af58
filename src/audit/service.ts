import { NotFound, invalidField } from "../http-errors/errors";
import type { Job } from "../scheduler/scheduler";
import type { Sealer } from "../secrets/sealer";
import type { Principal } from "../users/model";
import { AUDIT_CAPTURE_MAX_BYTES, type AuditQuery, type AuditRecord } from "./model";
import { auditSealContext, type AuditRepository, type AuditRow } from "./repository";
import type { AuditWriter } from "./writer";

/** What the proxy knows of one message when its exchange ends. */
export type AuditEntry = {
  caller: Principal;
  connectorId: string;
  method: string | null;
  name: string | null;
  outcome: AuditRow["outcome"];
  errorCode: number | null;
  httpStatus: number;
  startedAt: number;
  durationMs: number;
  requestBytes: number;
  responseBytes: number;
  /** With AUDIT__CAPTURE=arguments only. */
  captured?: { arguments?: unknown; result?: unknown };
};

export type AuditServiceDeps = {
  repository: AuditRepository;
  writer: AuditWriter;
  sealer: Sealer;
  clock: () => number;
  newId: () => string;
  capture: boolean;
  retentionMs: number;
  maxRecords: number;
};

const DEFAULT_PAGE = 50;

/** A captured value as JSON, cut to AUDIT_CAPTURE_MAX_BYTES (then a string prefix, marked truncated). */
function capped(value: unknown): { value: unknown; truncated: boolean } {
  const json = JSON.stringify(value) ?? "null";
  if (Buffer.byteLength(json) <= AUDIT_CAPTURE_MAX_BYTES) return { value, truncated: false };
  return { value: Buffer.from(json).subarray(0, AUDIT_CAPTURE_MAX_BYTES).toString("utf8"), truncated: true };
}

export function createAuditService(deps: AuditServiceDeps) {
  const { repository, writer, sealer } = deps;

  function view(row: AuditRow): AuditRecord {
    return {
      id: row.id,
      at: new Date(row.at).toISOString(),
      user_id: row.user_id,
      credential: row.credential,
      connector_id: row.connector_id,
      virtual_server_id: row.virtual_server_id,
      method: row.method,
      name: row.name,
      outcome: row.outcome,
      error_code: row.error_code,
      http_status: row.http_status,
      duration_ms: row.duration_ms,
      request_bytes: row.request_bytes,
      response_bytes: row.response_bytes,
      captured: row.captured === null ? null : JSON.parse(sealer.open(row.captured, auditSealContext(row.id))),
    };
  }

  const time = (value: string | undefined, field: string) => {
    if (value === undefined) return undefined;
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) throw invalidField(`query.${field}`, "is not a date-time");
    return ms;
  };

  return {
    capture: deps.capture,
    /** Writes what is queued now (at shutdown; before a listing). */
    flush: () => writer.flush(),

    /** Queues the record of one message (written in a batch, off the request). */
    record(entry: AuditEntry): void {
      const id = deps.newId();
      let captured: string | null = null;
      if (deps.capture && entry.captured) {
        const args = capped(entry.captured.arguments);
        const result = capped(entry.captured.result);
        const value = {
          ...(entry.captured.arguments !== undefined && { arguments: args.value }),
          ...(entry.captured.result !== undefined && { result: result.value }),
          ...((args.truncated || result.truncated) && { truncated: true }),
        };
        captured = sealer.seal(JSON.stringify(value), auditSealContext(id));
      }
      writer.push({
        id,
        at: entry.startedAt,
        user_id: entry.caller.id,
        credential: entry.caller.credential ?? null,
        connector_id: entry.connectorId,
        virtual_server_id: entry.caller.virtualServer ?? null,
        method: entry.method,
        name: entry.name,
        outcome: entry.outcome,
        error_code: entry.errorCode,
        http_status: entry.httpStatus,
        duration_ms: Math.round(entry.durationMs),
        request_bytes: entry.requestBytes,
        response_bytes: entry.responseBytes,
        captured,
      });
    },

    /** Users see their own records; administrators everyone's (or one user's). Newest first. */
    async list(caller: Principal, query: AuditQuery) {
      if (caller.role !== "admin" && query.user_id !== undefined && query.user_id !== caller.id)
        throw new NotFound(`No audit records of user ${query.user_id} for you`);
      const limit = query.limit ? Number(query.limit) : DEFAULT_PAGE;
      // What is queued now is part of the answer: a client that just called a tool sees its record.
      await writer.flush();
      const since = time(query.since, "since");
      const until = time(query.until, "until");
      const rows = await repository.page(
        {
          ...(caller.role !== "admin" ? { userId: caller.id } : query.user_id !== undefined && { userId: query.user_id }),
          ...(query.connector_id !== undefined && { connectorId: query.connector_id }),
          ...(query.virtual_server_id !== undefined && { virtualServerId: query.virtual_server_id }),
          ...(query.method !== undefined && { method: query.method }),
          ...(since !== undefined && { since }),
          ...(until !== undefined && { until }),
        },
        limit + 1,
        query.cursor,
      );
      const page = rows.slice(0, limit);
      return { items: page.map(view), next_cursor: rows.length > limit ? page.at(-1)!.id : null };
    },

    /** The scheduler's retention: older than AUDIT__RETENTION_DAYS, and beyond AUDIT__MAX_RECORDS (the oldest first). */
    job: {
      name: "expire-audit-records",
      async run() {
        await writer.flush();
        await repository.deleteBefore(deps.clock() - deps.retentionMs);
        await repository.trimTo(deps.maxRecords);
      },
    } satisfies Job,
  };
}
export type AuditService = ReturnType<typeof createAuditService>;
