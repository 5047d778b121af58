import { createHash } from "node:crypto";
import type { Clients } from "./clients";
import { InvalidGrant, InvalidTarget, UnsupportedGrantType } from "./errors";
import {
  ACCESS_TOKEN_PREFIX,
  ACCESS_TOKEN_TTL_MS,
  GRANT_TYPES_SUPPORTED,
  REFRESH_TOKEN_PREFIX,
  REFRESH_TOKEN_TTL_MS,
} from "./model";
import type { AuthServerRepository, ClientRow, GrantRow, TokenRow } from "./repository";
import { bindingOf, bindingOfResource, sameBinding } from "./resource";
import { grantedScope } from "./scope";
import { digest, newSecret } from "./secret";

/** [RFC 7636 §4.1](https://www.rfc-editor.org/rfc/rfc7636#section-4.1): 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** [RFC 6749 §5.1](https://www.rfc-editor.org/rfc/rfc6749#section-5.1): a successful token response. */
export type TokenResponse = {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
};

export type TokenEndpointDeps = {
  repository: AuthServerRepository;
  clients: Clients;
  clock: () => number;
  issuer: () => string;
};

/** The words of a grant type's refusals: the same checks, said of a code or of a refresh token. */
type Credential = { kind: "code" | "refresh"; unknown: string; otherClient: string; replayed: string };
const CODE: Credential = {
  kind: "code",
  unknown: "the code is unknown or expired",
  otherClient: "the code was issued to another client",
  // OAuth 2.1 §4.1.3: a code used twice is refused, and what the first use obtained is revoked.
  replayed: "the code was used already; the tokens it gave are revoked",
};
const REFRESH: Credential = {
  kind: "refresh",
  unknown: "the refresh token is unknown, expired or revoked",
  otherClient: "the refresh token was issued to another client",
  // OAuth 2.1 §4.3.1: refresh tokens rotate; one presented a second time was stolen or replayed, so the grant ends.
  replayed: "the refresh token was used already; the grant is revoked",
};

/**
 * The token endpoint ([RFC 6749 §3.2](https://www.rfc-editor.org/rfc/rfc6749#section-3.2)): one function per grant
 * type, each throwing the OAuthError its check finds. Codes and refresh tokens are single-use: presented again, the
 * grant they belong to ends.
 */
export function createTokenEndpoint(deps: TokenEndpointDeps) {
  const { repository, clients, clock } = deps;

  /** The unexpired code or refresh token `value` that `client` holds, and its grant; else invalid_grant. */
  async function presented(credential: Credential, value: string | null, client: ClientRow) {
    const row = value ? await repository.findToken(digest(value)) : undefined;
    if (!row || row.kind !== credential.kind || row.expires_at <= clock()) throw new InvalidGrant(credential.unknown);
    const grant = await repository.findGrant(row.grant_id);
    if (!grant || grant.client_id !== client.client_id) throw new InvalidGrant(credential.otherClient);
    return { row, grant };
  }

  /** [RFC 8707 §2.2](https://www.rfc-editor.org/rfc/rfc8707#section-2.2): a resource named at the token endpoint must be the granted one. */
  function checkResource(form: URLSearchParams, grant: GrantRow): void {
    const resource = form.get("resource");
    if (resource !== null && !sameBinding(bindingOfResource(deps.issuer(), resource), bindingOf(grant)))
      throw new InvalidTarget("resource differs from the authorized one");
  }

  /** Marks the code or refresh token used; used already, it was replayed: the grant ends. */
  async function useOnce(credential: Credential, row: TokenRow, grant: GrantRow): Promise<void> {
    if (await repository.useToken(row.digest, credential.kind, clock())) return;
    await repository.deleteGrant(grant.user_id, grant.id);
    throw new InvalidGrant(credential.replayed);
  }

  async function issueTokens(grant: GrantRow): Promise<TokenResponse> {
    const now = clock();
    const access = newSecret(ACCESS_TOKEN_PREFIX);
    const refresh = newSecret(REFRESH_TOKEN_PREFIX);
    const base = { grant_id: grant.id, code_challenge: null, redirect_uri: null, used_at: null, created_at: now };
    await repository.insertToken({ ...base, digest: digest(access), kind: "access", expires_at: now + ACCESS_TOKEN_TTL_MS });
    await repository.insertToken({ ...base, digest: digest(refresh), kind: "refresh", expires_at: now + REFRESH_TOKEN_TTL_MS });
    await repository.touchGrant(grant.id, now);
    return {
      access_token: access,
      token_type: "Bearer",
      expires_in: Math.floor(ACCESS_TOKEN_TTL_MS / 1000),
      refresh_token: refresh,
      // RFC 6749 §5.1: what was granted, which may differ from what the client asked for.
      scope: grantedScope(grant.scope),
    };
  }

  /** [RFC 6749 §4.1.3](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.3): a code for tokens, with its PKCE proof. */
  async function authorizationCodeGrant(form: URLSearchParams): Promise<TokenResponse> {
    const client = await clients.tokenClient(form.get("client_id"));
    const { row, grant } = await presented(CODE, form.get("code"), client);
    if (form.get("redirect_uri") !== row.redirect_uri)
      throw new InvalidGrant("redirect_uri differs from the authorization request's");
    const verifier = form.get("code_verifier") ?? "";
    // [RFC 7636 §4.6](https://www.rfc-editor.org/rfc/rfc7636#section-4.6): BASE64URL(SHA256(verifier)) must equal the challenge.
    if (!VERIFIER.test(verifier) || createHash("sha256").update(verifier).digest("base64url") !== row.code_challenge)
      throw new InvalidGrant("the PKCE code_verifier does not match the code_challenge");
    checkResource(form, grant);
    await useOnce(CODE, row, grant);
    return issueTokens(grant);
  }

  /** [RFC 6749 §6](https://www.rfc-editor.org/rfc/rfc6749#section-6): a refresh token for new tokens; the old one is used up. */
  async function refreshTokenGrant(form: URLSearchParams): Promise<TokenResponse> {
    const client = await clients.tokenClient(form.get("client_id"));
    const { row, grant } = await presented(REFRESH, form.get("refresh_token"), client);
    checkResource(form, grant);
    await useOnce(REFRESH, row, grant);
    return issueTokens(grant);
  }

  /** Each grant type the metadata names, and only those, has its function (RFC 8414 §2: grant_types_supported). */
  const GRANT_TYPES: Record<(typeof GRANT_TYPES_SUPPORTED)[number], (form: URLSearchParams) => Promise<TokenResponse>> = {
    authorization_code: authorizationCodeGrant,
    refresh_token: refreshTokenGrant,
  };
  const isSupported = (type: string | null): type is keyof typeof GRANT_TYPES =>
    // Own properties only: a grant_type such as "constructor" finds nothing.
    type !== null && Object.hasOwn(GRANT_TYPES, type);

  return {
    /** A token request, answered by its grant type's function. */
    async token(form: URLSearchParams): Promise<TokenResponse> {
      const type = form.get("grant_type");
      if (!isSupported(type)) throw new UnsupportedGrantType(`grant_type must be ${GRANT_TYPES_SUPPORTED.join(" or ")}`);
      return GRANT_TYPES[type](form);
    },
  };
}
