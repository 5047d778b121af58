import type { Job } from "../scheduler/scheduler";
import type { Principal } from "../users/model";
import { createAuthorizationEndpoint, type AuthorizationDeps } from "./authorization";
import type { Clients } from "./clients";
import { authorizationServerMetadata, protectedResourceMetadata, rootResourceMetadata } from "./metadata";
import { CODE_TTL_MS } from "./model";
import type { AuthServerRepository } from "./repository";
import { bindingOf, type Binding } from "./resource";
import { createRevocationEndpoint } from "./revocation";
import { grantedScope } from "./scope";
import { digest } from "./secret";
import { createTokenEndpoint } from "./token";

export type AuthServerDeps = Omit<AuthorizationDeps, "issuer"> & {
  repository: AuthServerRepository;
  clients: Clients;
  publicUrl: () => string;
};

/**
 * The service as an OAuth 2.1 authorization server for its own MCP proxy URLs ([MCP authorization 2025-11-25](https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization)):
 * the authorization code flow with PKCE S256 only, RFC 8707 resources (one connector's proxy URL or one virtual
 * server's MCP URL), rotated refresh
 * tokens, RFC 7009 revocation. The person signs in with their account of this service and consents. Each endpoint's
 * rules have their file (metadata.ts, authorization.ts, token.ts, revocation.ts); this joins them, and holds what the
 * proxy and the grants API ask of the issued grants.
 */
export function createAuthServer(deps: AuthServerDeps) {
  const { repository, clock } = deps;
  const issuer = () => deps.publicUrl();
  return {
    issuer,
    metadata: () => authorizationServerMetadata(issuer()),
    resourceMetadata: (binding: Binding) => protectedResourceMetadata(issuer(), binding),
    rootResourceMetadata: () => rootResourceMetadata(issuer()),
    ...createAuthorizationEndpoint({ ...deps, issuer }),
    ...createTokenEndpoint({ ...deps, issuer }),
    revoke: createRevocationEndpoint(deps),

    /**
     * A bearer access token at an MCP URL: the person it acts for and the one connector or virtual server it may
     * reach, else undefined.
     */
    async verify(token: string): Promise<Principal | undefined> {
      const owner = await repository.accessTokenOwner(digest(token));
      if (!owner || owner.kind !== "access" || owner.expires_at <= clock() || owner.disabled_at !== null) return undefined;
      const binding = bindingOf(owner);
      return {
        id: owner.user_id,
        username: owner.username,
        role: owner.role,
        ...(binding.virtual_server_id !== undefined
          ? { boundVirtualServer: binding.virtual_server_id }
          : { connector: binding.connector_id }),
        credential: `oauth:${owner.client_id}`,
      };
    },

    grantsOf: async (userId: string) =>
      (await repository.grantsOf(userId)).map((grant) => ({ ...grant, scope: grantedScope(grant.scope) })),
    revokeGrant: (userId: string, id: string) => repository.deleteGrant(userId, id),
    /** The scheduler's: expired sign-in requests and tokens go, and grants nothing can use any more. */
    job: {
      name: "expire-authorization-server-records",
      run: async () => void (await repository.deleteExpired(clock(), clock() - CODE_TTL_MS)),
    } satisfies Job,
  };
}
export type AuthServer = ReturnType<typeof createAuthServer>;
