import { Elysia, t } from "elysia";
import { Problem } from "../http-errors/model";
import type { ApiBodyPlugin } from "../http/json-body";
import { ListQuery } from "../http/pages";
import { IdParams } from "../http/params";
import type { AuthPlugin } from "../users/auth-plugin";
import { CreateVirtualServerBody, MAX_MEMBERS, UpdateVirtualServerBody, VirtualServer, VirtualServerList } from "./model";
import type { VirtualServerService } from "./service";

const problems = { 401: Problem, 404: Problem, 409: Problem, 422: Problem };

/** The virtual server resource, `/api/v1/virtual-servers` (docs/interface.md §9.1). */
export function virtualServerRoutes(service: VirtualServerService, auth: AuthPlugin, apiBody: ApiBodyPlugin) {
  return new Elysia({ prefix: "/api/v1/virtual-servers", detail: { tags: ["Virtual servers"] } })
    .use(auth)
    .use(apiBody)
    .post(
      "",
      async ({ principal, body, set }) => {
        const server = await service.create(principal, body);
        set.status = 201;
        set.headers.location = `/api/v1/virtual-servers/${server.id}`;
        return server;
      },
      {
        auth: true,
        body: CreateVirtualServerBody,
        response: { 201: VirtualServer, 400: Problem, ...problems },
        detail: {
          summary: "Create a virtual server",
          description: `One MCP endpoint (\`mcp_url\`) serving up to ${MAX_MEMBERS} of your connectors, their tools and prompts as \`{prefix}__{name}\`. A member that is not one of your connectors (another user's, or none) is a 422 naming it; so is a prefix two members share. More than VIRTUAL__MAX_PER_USER virtual servers: 409.`,
        },
      },
    )
    .get("", ({ principal, query }) => service.list(principal, query), {
      auth: true,
      query: ListQuery,
      response: { 200: VirtualServerList, ...problems },
      detail: { summary: "List virtual servers, newest first", description: "Administrators see every user's." },
    })
    .get("/:id", ({ principal, params }) => service.get(principal, params.id), {
      auth: true,
      params: IdParams,
      response: { 200: VirtualServer, ...problems },
      detail: { summary: "Get a virtual server" },
    })
    .patch("/:id", ({ principal, params, body }) => service.update(principal, params.id, body), {
      auth: true,
      params: IdParams,
      body: UpdateVirtualServerBody,
      response: { 200: VirtualServer, 400: Problem, ...problems },
      detail: {
        summary: "Change a virtual server",
        description:
          "The fields given replace the stored ones. `members` replaces the list: members must be the owner's connectors (an administrator changing another user's virtual server picks from that user's); a member already there keeps its prefix unless one is given.",
      },
    })
    .delete(
      "/:id",
      async ({ principal, params, set }) => {
        await service.delete(principal, params.id);
        set.status = 204;
      },
      {
        auth: true,
        params: IdParams,
        response: { 204: t.Void(), ...problems },
        detail: { summary: "Delete a virtual server", description: "Its member connectors stay as they are." },
      },
    );
}
