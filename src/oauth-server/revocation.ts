import type { Clients } from "./clients";
import { InvalidRequest } from "./errors";
import type { AuthServerRepository } from "./repository";
import { digest } from "./secret";

/**
 * The revocation endpoint ([RFC 7009 §2](https://www.rfc-editor.org/rfc/rfc7009#section-2)): ends a token the client
 * holds (a refresh token: its whole grant, §2.1). An unknown token, or another client's, is not an error (§2.2): the
 * answer tells a caller nothing about tokens it does not hold.
 */
export function createRevocationEndpoint({ repository, clients }: { repository: AuthServerRepository; clients: Clients }) {
  return async function revoke(form: URLSearchParams): Promise<void> {
    const token = form.get("token");
    if (!token) throw new InvalidRequest("token is required");
    const client = await clients.tokenClient(form.get("client_id"));
    const row = await repository.findToken(digest(token));
    if (!row || row.kind === "code") return;
    const grant = await repository.findGrant(row.grant_id);
    if (!grant || grant.client_id !== client.client_id) return;
    if (row.kind === "refresh") await repository.deleteGrant(grant.user_id, grant.id);
    else await repository.deleteToken(row.digest);
  };
}
