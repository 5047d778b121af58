/**
 * What binds each sealed OAuth value to its row (secrets/sealer.ts: the context is authenticated data, so a value
 * copied to another row fails to open). One place, for the OAuth client and for key rotation alike.
 */
export const clientSeal = (issuer: string, redirectUri: string) => `oauth_clients/${issuer}/${redirectUri}`;
export const stateSeal = (stateDigest: string) => `oauth_states/${stateDigest}`;
export const grantSeal = (connectorId: string) => `oauth_grants/${connectorId}`;
