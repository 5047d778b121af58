import { NotFound, invalidField } from "../http-errors/errors";
import type { Job } from "../scheduler/scheduler";
import type { Sealer } from "../secrets/sealer";
import type { Principal } from "../users/model";
import { AUDIT_CAPTURE_MAX_BYTES, type AuditQuery, type AuditRecord } from "./model";
import { csvHeader, csvLine, ndjsonLine } from "./export";
import { auditSealContext, type AuditFilter, type AuditRepository, type AuditRow } from "./repository";
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
/** Records read per query while an export streams: its memory is one such page, whatever the trail holds. */
export const EXPORT_PAGE = 500;

/** A captured value as JSON, cut to AUDIT_CAPTURE_MAX_BYTES (then a string prefix, marked truncated). */
function capped(value: unknown): { value: unknown; truncated: boolean } {
  const json = JSON.stringify(value) ?? "null";
  if (Buffer.byteLength(json) <= AUDIT_CAPTURE_MAX_BYTES) return { value, truncated: false };
  return { value: Buffer.from(json).subarray(0, AUDIT_CAPTURE_MAX_BYTES).toString("utf8"), truncated: true };
}

export function createAuditService(deps: AuditServiceDeps) {
  const { repository, writer, sealer } = deps;

  /** The query's filters as the caller may apply them: users see their own records, administrators anyone's. */
  function filterOf(caller: Principal, query: AuditQuery): AuditFilter {
    if (caller.role !== "admin" && query.user_id !== undefined && query.user_id !== caller.id)
      throw new NotFound(`No audit records of user ${query.user_id} for you`);
    const since = time(query.since, "since");
    const until = time(query.until, "until");
    return {
      ...(caller.role !== "admin" ? { userId: caller.id } : query.user_id !== undefined && { userId: query.user_id }),
      ...(query.connector_id !== undefined && { connectorId: query.connector_id }),
      ...(query.virtual_server_id !== undefined && { virtualServerId: query.virtual_server_id }),
      ...(query.method !== undefined && { method: query.method }),
      ...(query.name !== undefined && { name: query.name }),
      ...(query.outcome !== undefined && { outcome: query.outcome }),
      ...(since !== undefined && { since }),
      ...(until !== undefined && { until }),
    };
  }

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
      const filter = filterOf(caller, query);
      const limit = query.limit ? Number(query.limit) : DEFAULT_PAGE;
      // What is queued now is part of the answer: a client that just called a tool sees its record.
      await writer.flush();
      const rows = await repository.page(filter, limit + 1, query.cursor);
      const page = rows.slice(0, limit);
      return { items: page.map(view), next_cursor: rows.length > limit ? page.at(-1)!.id : null };
    },

    /**
     * Every record the query's filters select, newest first, as NDJSON or CSV: streamed a page at a time as the client
     * reads (the next query runs when the stream is pulled), so memory stays one page whatever the trail holds.
     */
    async export(caller: Principal, query: AuditQuery, format: "ndjson" | "csv"): Promise<Response> {
      const filter = filterOf(caller, query);
      await writer.flush();
      const encoder = new TextEncoder();
      let after = query.cursor;
      let started = false;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const lines: string[] = [];
          if (!started && format === "csv") lines.push(csvHeader());
          started = true;
          const rows = await repository.page(filter, EXPORT_PAGE, after);
          for (const row of rows) lines.push(format === "csv" ? csvLine(view(row)) : ndjsonLine(view(row)));
          if (lines.length > 0) controller.enqueue(encoder.encode(lines.join("")));
          if (rows.length < EXPORT_PAGE) controller.close();
          else after = rows.at(-1)!.id;
        },
      });
      const stamp = new Date(deps.clock()).toISOString().replace(/[:.]/g, "-");
      return new Response(body, {
        headers: {
          "content-type": format === "csv" ? "text/csv; charset=utf-8; header=present" : "application/x-ndjson",
          "content-disposition": `attachment; filename="audit-${stamp}.${format}"`,
          "cache-control": "no-store",
        },
      });
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
