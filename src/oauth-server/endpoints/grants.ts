import { Elysia, t } from "elysia";
import { NotFound } from "../../http-errors/errors";
import { Problem } from "../../http-errors/model";
import { IdParams } from "../../http/params";
import type { AuthPlugin } from "../../users/auth-plugin";
import { GrantList } from "../model";
import type { AuthServer } from "../service";

/** What a person allowed MCP clients to reach, and taking it back: the service's own API, with its problem documents. */
export function grantRoutes(server: AuthServer, auth: AuthPlugin) {
  return new Elysia({ detail: { tags: ["Grants"] } }).use(auth).group("/api/v1/grants", (grants) =>
    grants
      .get(
        "",
        async ({ principal }) => ({
          items: (await server.grantsOf(principal.id)).map((g) => ({
            id: g.id,
            client_id: g.client_id,
            connector_id: g.connector_id,
            virtual_server_id: g.virtual_server_id,
            scope: g.scope,
            created_at: new Date(g.created_at).toISOString(),
            last_used_at: g.last_used_at === null ? null : new Date(g.last_used_at).toISOString(),
          })),
        }),
        {
          auth: true,
          response: { 200: GrantList, 401: Problem },
          detail: {
            summary: "What you allowed MCP clients to reach",
            description: "Each grant: the client, the connector or virtual server it reaches, when it was given and last used.",
          },
        },
      )
      .delete(
        "/:id",
        async ({ principal, params, set }) => {
          if (!(await server.revokeGrant(principal.id, params.id))) throw new NotFound(`No grant ${params.id}`);
          set.status = 204;
        },
        {
          auth: true,
          params: IdParams,
          response: { 204: t.Void(), 401: Problem, 404: Problem },
          detail: {
            summary: "Revoke a grant",
            description: "The client's tokens stop working at once (in every replica within a second).",
          },
        },
      ),
  );
}
