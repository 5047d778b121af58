import { t } from "elysia";

export const AUDIT_CAPTURE_MAX_BYTES = 8 * 1024;

/** How an exchange ended: a result, a JSON-RPC error, an HTTP status, or a rate limit's refusal (docs/behaviour.md "Rate limits"). */
export const AUDIT_OUTCOMES = ["result", "error", "http", "rate_limited"] as const;

export const AuditQuery = t.Object({
  connector_id: t.Optional(t.String({ maxLength: 100, description: "Only this connector's records" })),
  virtual_server_id: t.Optional(
    t.String({ maxLength: 100, description: "Only the records of messages sent through this virtual server (to its members)" }),
  ),
  user_id: t.Optional(
    t.String({ maxLength: 100, description: "Only this user's records (administrators; others see only their own)" }),
  ),
  method: t.Optional(t.String({ maxLength: 100, description: "Only this JSON-RPC method, e.g. tools/call" })),
  name: t.Optional(t.String({ maxLength: 2048, description: "Only this tool, prompt or resource URI, e.g. send_email" })),
  outcome: t.Optional(
    t.Union(
      AUDIT_OUTCOMES.map((o) => t.Literal(o)),
      { description: "Only this outcome" },
    ),
  ),
  since: t.Optional(t.String({ format: "date-time", description: "From this time on (inclusive)" })),
  until: t.Optional(t.String({ format: "date-time", description: "Up to this time (inclusive)" })),
  limit: t.Optional(
    t.String({
      pattern: "^(?:100|[1-9][0-9]?)$",
      error: "must be a whole number from 1 to 100",
      description: "Page size, 1 to 100 (default 50)",
      "x-integer": { minimum: 1, maximum: 100, default: 50 },
    }),
  ),
  cursor: t.Optional(t.String({ maxLength: 100, description: "next_cursor of the previous page" })),
  format: t.Optional(
    t.Union([t.Literal("json"), t.Literal("ndjson"), t.Literal("csv")], {
      description:
        "json (default): one page; ndjson or csv: every record the filters select, newest first, streamed as a download (limit does not apply)",
    }),
  ),
});
export type AuditQuery = typeof AuditQuery.static;

export const AuditRecord = t.Object({
  id: t.String(),
  at: t.String({ format: "date-time" }),
  user_id: t.String(),
  credential: t.Union([t.String(), t.Null()], { description: "basic, session, token:<API token id> or oauth:<client id>" }),
  connector_id: t.String({ description: "The connector whose proxy URL got the message (a virtual server's member)" }),
  virtual_server_id: t.Union([t.String(), t.Null()], {
    description: "The virtual server the message came through (its member is connector_id); null when sent to the proxy URL",
  }),
  method: t.Union([t.String(), t.Null()], {
    description: "The JSON-RPC method (batch for a batch, null when the body was not JSON-RPC)",
  }),
  name: t.Union([t.String(), t.Null()], { description: "The tool, prompt or resource URI the request named" }),
  outcome: t.Union(
    AUDIT_OUTCOMES.map((o) => t.Literal(o)),
    {
      description:
        "result, error (a JSON-RPC error: see error_code), http (the exchange ended on http_status), or rate_limited (a rate limit answered in the server's place: a tool result with isError, or a 429)",
    },
  ),
  error_code: t.Union([t.Integer(), t.Null()]),
  http_status: t.Integer(),
  duration_ms: t.Integer(),
  request_bytes: t.Integer(),
  response_bytes: t.Integer(),
  captured: t.Union(
    [
      t.Object({ arguments: t.Optional(t.Unknown()), result: t.Optional(t.Unknown()), truncated: t.Optional(t.Boolean()) }),
      t.Null(),
    ],
    {
      description: "With AUDIT__CAPTURE=arguments: the call's arguments and result (8 KiB each at most; sealed at rest)",
    },
  ),
});
export type AuditRecord = typeof AuditRecord.static;

export const AuditList = t.Object({
  items: t.Array(AuditRecord),
  next_cursor: t.Union([t.String(), t.Null()], { description: "Pass as `cursor` for the next (older) page; null on the last" }),
});
