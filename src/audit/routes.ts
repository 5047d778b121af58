import { Elysia } from "elysia";
import { Problem } from "../http-errors/model";
import type { AuthPlugin } from "../users/auth-plugin";
import { AuditList, AuditQuery } from "./model";
import type { AuditService } from "./service";

export function auditRoutes(audit: AuditService, auth: AuthPlugin) {
  return new Elysia({ prefix: "/api/v1", detail: { tags: ["Audit"] } })
    .use(auth)
    .get("/audit", ({ principal, query }) => audit.list(principal, query), {
      auth: true,
      query: AuditQuery,
      response: { 200: AuditList, 401: Problem, 404: Problem, 422: Problem },
      detail: {
        summary: "The audit trail of MCP messages through the proxy, newest first",
        description:
          "One record per message a client POSTed to a connector's proxy URL: who (user and credential), which connector (and the virtual server, when it came through one: its member is the connector), the JSON-RPC method and tool, resource or prompt, the outcome (result, a JSON-RPC error code, or an HTTP status), duration and sizes. Your own records; administrators see everyone's. Filters combine; follow next_cursor for older pages.",
      },
    });
}
