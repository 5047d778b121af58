import { Elysia } from "elysia";
import { alsoAnswers } from "../docs/plugin";
import { Problem } from "../http-errors/model";
import type { AuthPlugin } from "../users/auth-plugin";
import { AuditList, AuditQuery } from "./model";
import type { AuditService } from "./service";

export function auditRoutes(audit: AuditService, auth: AuthPlugin) {
  return new Elysia({ prefix: "/api/v1", detail: { tags: ["Audit"] } }).use(auth).get(
    "/audit",
    // Always a Response, from an async function: Elysia then leaves an export's stream alone (a plain function's
    // promise of a Response gets validated against the page's schema).
    async ({ principal, query }): Promise<Response> =>
      query.format === "ndjson" || query.format === "csv"
        ? audit.export(principal, query, query.format)
        : Response.json(await audit.list(principal, query)),
    {
      auth: true,
      query: AuditQuery,
      response: { 200: AuditList, 401: Problem, 404: Problem, 422: Problem },
      detail: {
        summary: "The audit trail of MCP messages through the proxy, newest first",
        description:
          "One record per message a client POSTed to a connector's proxy URL: who (user and credential), which connector (and the virtual server, when it came through one: its member is the connector), the JSON-RPC method and tool, resource or prompt, the outcome (result, a JSON-RPC error code, or an HTTP status), duration and sizes. Your own records; administrators see everyone's. Filters combine; follow next_cursor for older pages. With `format=ndjson` or `format=csv`, every record the filters select is streamed as a download (one JSON object per line, or RFC 4180 CSV with a header line; a text a spreadsheet would run as a formula starts with ').",
        ...alsoAnswers({
          "application/x-ndjson": "format=ndjson: every selected record, one AuditRecord as JSON per line",
          "text/csv": "format=csv: a header line, then every selected record, one per line",
        }),
      },
    },
  );
}
