import { Elysia, t } from "elysia";
import { PROTOCOL_ERRORS } from "../../docs/plugin";
import { JsonDocument, OAuthErrorBody, OAUTH_PATHS } from "../model";
import { JSON_UNREAD, readRegistration } from "../requests";
import { oauthJson } from "../responses";
import type { AuthServerEndpointDeps } from "./deps";

/** The registration endpoint ([RFC 7591 §3](https://www.rfc-editor.org/rfc/rfc7591#section-3)): open to any client, bounded per address. */
export function registrationRoutes({ clients, clientAddress, json }: AuthServerEndpointDeps) {
  const register = json(async ({ request }) =>
    oauthJson(await clients.register(await readRegistration(request), clientAddress(request)), 201),
  );

  return new Elysia({ detail: { tags: ["Authorization server"] } }).post(OAUTH_PATHS.register, register, {
    parse: JSON_UNREAD,
    body: t.Any({
      description: "Client metadata (RFC 7591 §2): redirect_uris required; only public clients (token_endpoint_auth_method none)",
      examples: [
        {
          client_name: "My MCP client",
          redirect_uris: ["http://127.0.0.1:33418/callback"],
          token_endpoint_auth_method: "none",
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
        },
      ],
    }),
    response: { 201: JsonDocument, 400: OAuthErrorBody, 429: OAuthErrorBody },
    detail: {
      summary: "Register an MCP client (RFC 7591)",
      description:
        "No credentials: any client may register. Registrations never used expire after a day; their number is capped per client address (AUTHSERVER__MAX_REGISTRATIONS_PER_ADDRESS) and in all (AUTHSERVER__MAX_REGISTRATIONS): 429 with Retry-After beyond.",
      ...PROTOCOL_ERRORS,
    },
  });
}
