import type { SealedColumns } from "../connectors/sealed-columns";
import type { ConnectorRow } from "../connectors/repository";
import { isManaged } from "../connectors/service";
import type { FetchLike } from "../http/fetch";
import type { OAuthClient } from "../oauth-client/client";
import type { Runtime } from "../runtime/runtime";

/** Where the proxy sends a connector's requests, and how: its URL, or its managed deployment's endpoint. */
export type Target = { url: URL; managed: boolean; fetch?: FetchLike };

export function createTargets(deps: { runtime: Runtime; oauth: OAuthClient; sealed: SealedColumns }) {
  return {
    /** Undefined when a managed connector's deployment is not running (reconciliation is starting it again). */
    target(row: ConnectorRow): Target | undefined {
      if (!isManaged(row)) return { url: new URL(row.url), managed: false };
      const url = deps.runtime.endpoint(row.id);
      return url && { url, managed: true, fetch: deps.runtime.fetch };
    },

    /** Headers the proxy adds for this connector: its stored headers, or its OAuth access token. */
    async credentials(row: ConnectorRow): Promise<Record<string, string>> {
      if (row.auth_method === "oauth") {
        const token = await deps.oauth.accessToken(row.id);
        return token ? { authorization: `Bearer ${token}` } : {};
      }
      return deps.sealed.headers(row);
    },
  };
}
export type Targets = ReturnType<typeof createTargets>;
