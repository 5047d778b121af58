import { Elysia, t } from "elysia";
import { Problem } from "../http-errors/model";
import { streamCredential } from "../users/access-watch";
import type { AuthPlugin } from "../users/auth-plugin";
import { EVENT_RETENTION_MS, HEARTBEAT_MS, type EventStreams } from "./stream";

export function eventRoutes(stream: EventStreams, auth: AuthPlugin) {
  return new Elysia({ prefix: "/api/v1/connectors", detail: { tags: ["Connector events"] } })
    .use(auth)
    .get(
      "/events",
      ({ principal, request }) => stream(principal, streamCredential(request), request.headers.get("last-event-id")),
      {
        auth: true,
        response: {
          200: t.String({
            description:
              "text/event-stream: events `connector.created`, `connector.updated`, `connector.deleted`, each with `id` and JSON `data` {id, owner_id, name, url, state, disconnect_reason, updated_at}; `virtual_server.created`, `virtual_server.updated`, `virtual_server.deleted` with `data` {id, owner_id, name, members, updated_at}; `reset` when Last-Event-ID is older than what is kept",
          }),
          401: Problem,
          429: Problem,
        },
        detail: {
          summary: "Follow changes to connectors and virtual servers (Server-Sent Events)",
          description: `Your connectors' and virtual servers' changes (administrators: everyone's), each once and in order, as they happen on any replica. Reconnect with \`Last-Event-ID\` to get what you missed: events are kept ${EVENT_RETENTION_MS / 3_600_000} hours. A comment every ${HEARTBEAT_MS / 1000} s keeps idle proxies from closing the stream.`,
        },
      },
    );
}
