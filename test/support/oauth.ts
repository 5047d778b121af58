import type { Deps } from "../../src/app";
import { sqliteOf } from "./store";

export type GrantSecrets = { access_token: string; refresh_token: string | null };

/** The connector's stored tokens, opened with the service's own key (the test's view of the sealed row). */
export function storedGrant(service: { deps: Pick<Deps, "store" | "sealer"> }, connectorId: string): (GrantSecrets & { expires_at: number | null; failures: number }) | undefined {
  const row = sqliteOf(service.deps).query("SELECT secrets, expires_at, failures FROM oauth_grants WHERE connector_id = ?").get(connectorId) as
    | { secrets: string; expires_at: number | null; failures: number }
    | null;
  if (!row) return undefined;
  return { ...(JSON.parse(service.deps.sealer.open(row.secrets, `oauth_grants/${connectorId}`)) as GrantSecrets), expires_at: row.expires_at, failures: row.failures };
}
