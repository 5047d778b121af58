import type { Deps } from "../../src/app";
import { createOAuthRepository } from "../../src/oauth-client/repository";

export type GrantSecrets = { access_token: string; refresh_token: string | null };

/** The connector's stored tokens, opened with the service's own key (the test's view of the sealed row). */
export async function storedGrant(
  service: { deps: Pick<Deps, "store" | "sealer"> },
  connectorId: string,
): Promise<(GrantSecrets & { expires_at: number | null; failures: number }) | undefined> {
  const row = await createOAuthRepository(service.deps.store).findGrant(connectorId);
  if (!row) return undefined;
  return {
    ...(JSON.parse(service.deps.sealer.open(row.secrets, `oauth_grants/${connectorId}`)) as GrantSecrets),
    expires_at: row.expires_at,
    failures: row.failures,
  };
}
