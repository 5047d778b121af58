import { timingSafeEqual } from "node:crypto";
import { jsonRpcError } from "./json-rpc";

/**
 * A gateway serves a stdio MCP server that may hold a user's access token, so only the service may use it: each
 * deployment has its own random token, which the gateway wants in this header on /mcp (its /healthz stays open for
 * probes). A header of its own, not Authorization: the API server's service proxy, between the service and the pod,
 * takes Authorization for itself.
 */
export const GATEWAY_TOKEN_HEADER = "x-connector-gateway-token";

/** The refusal for a request without the deployment's token, or undefined when it has it (compared in constant time). */
export function refuseWithoutToken(request: Request, token: string | undefined): Response | undefined {
  if (token === undefined) return undefined;
  const given = Buffer.from(request.headers.get(GATEWAY_TOKEN_HEADER) ?? "");
  const wanted = Buffer.from(token);
  if (given.length === wanted.length && timingSafeEqual(given, wanted)) return undefined;
  return jsonRpcError(401, "This gateway serves its connector-service only");
}
