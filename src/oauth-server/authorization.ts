import type { ConnectorRow } from "../connectors/repository";
import type { Principal } from "../users/model";
import type { VirtualServerRow } from "../virtual-servers/repository";
import { ClientRefused, type Clients } from "./clients";
import { AccessDenied, InvalidRequest, InvalidTarget, NoRedirect, OAuthError, UnsupportedResponseType } from "./errors";
import {
  CODE_TTL_MS,
  MAX_PARAMETER_LENGTH,
  MAX_PENDING_REQUESTS_PER_USER,
  REQUEST_TTL_MS,
  type AuthorizationParams,
} from "./model";
import type { AuthServerRepository, ClientRow, GrantRow } from "./repository";
import { bindingOf, bindingOfResource, resourceOf, type Binding } from "./resource";
import { grantedScope } from "./scope";
import { digest, newSecret } from "./secret";

/** [RFC 7636 §4.2](https://www.rfc-editor.org/rfc/rfc7636#section-4.2): an S256 challenge is 32 bytes, base64url without padding. */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export type Redirect = { location: string };
/** An authorization request checked at the authorization endpoint, with its client: what the person's pages show. */
export type CheckedRequest = { client: ClientRow; params: AuthorizationParams };
/**
 * The connector or virtual server a consent page names: undefined when it is not the person's to give (the page
 * says so). A connector's `url` is its upstream's; a virtual server's, its MCP URL.
 */
export type ConsentTarget = { kind: "connector" | "virtual server"; name: string; url: string } | undefined;

export type AuthorizationDeps = {
  repository: AuthServerRepository;
  clients: Clients;
  clock: () => number;
  newId: () => string;
  issuer: () => string;
  /** The connector a resource names, whoever owns it. */
  connector(id: string): Promise<ConnectorRow | undefined>;
  /** The virtual server a resource names, whoever owns it. */
  virtualServer(id: string): Promise<VirtualServerRow | undefined>;
  /** A user as a principal (the one who signed in on a request's page). */
  user(id: string): Promise<Principal | undefined>;
};

/** What a resource names, as far as consent goes: whose it is, and what the page calls it. */
type Target = { owner_id: string; consent: NonNullable<ConsentTarget> };

/**
 * A person may give a client access to their own connectors and virtual servers; an administrator to any (as the
 * API and the proxy let them reach any).
 */
const mayGrant = (target: Target | undefined, user: Pick<Principal, "id" | "role">): target is Target =>
  target !== undefined && (target.owner_id === user.id || user.role === "admin");

/** A check whose OAuth error, found before the person answered, is a page for them (NoRedirect), never a redirect. */
function onPage<T>(check: () => T): T {
  try {
    return check();
  } catch (e) {
    if (e instanceof OAuthError) throw NoRedirect.of(e);
    throw e;
  }
}

/** [RFC 6749 §3.1](https://www.rfc-editor.org/rfc/rfc6749#section-3.1): parameters are sent once; each is short enough to keep. */
function checkParameters(query: URLSearchParams): void {
  for (const key of new Set(query.keys())) {
    if (query.getAll(key).length > 1) throw new InvalidRequest(`${key} is repeated`);
    if (query.get(key)!.length > MAX_PARAMETER_LENGTH)
      throw new InvalidRequest(`${key} is longer than ${MAX_PARAMETER_LENGTH} characters`);
  }
}

/** What the code flow asks of a request (OAuth 2.1 §4.1.1): `code`, PKCE S256, and an RFC 8707 resource of this service. */
function checkCodeRequest(query: URLSearchParams, issuer: string): Binding & Pick<AuthorizationParams, "code_challenge"> {
  if (query.get("response_type") !== "code")
    throw new UnsupportedResponseType("only the authorization code flow (response_type=code) is offered");
  const challenge = query.get("code_challenge");
  if (query.get("code_challenge_method") !== "S256" || !challenge || !CHALLENGE.test(challenge))
    throw new InvalidRequest("PKCE is required: code_challenge (43 characters) with code_challenge_method=S256");
  return { code_challenge: challenge, ...bindingOfResource(issuer, query.get("resource")) };
}

/** [RFC 6749 §4.1.2](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2) and [RFC 9207 §2](https://www.rfc-editor.org/rfc/rfc9207#section-2): the answer to the client, with `iss`. */
function redirect(
  issuer: string,
  params: Pick<AuthorizationParams, "redirect_uri" | "state">,
  answer: Record<string, string>,
): Redirect {
  const url = new URL(params.redirect_uri);
  for (const [key, value] of Object.entries(answer)) url.searchParams.set(key, value);
  if (params.state !== null) url.searchParams.set("state", params.state);
  url.searchParams.set("iss", issuer);
  return { location: url.href };
}

/**
 * The authorization endpoint ([RFC 6749 §4.1.1](https://www.rfc-editor.org/rfc/rfc6749#section-4.1.1), OAuth 2.1
 * §4.1.1): the request checked, the person signed in, their answer. Until they answered, anything wrong is a
 * NoRedirect, a page for the person: nothing goes back to the client before that.
 */
export function createAuthorizationEndpoint(deps: AuthorizationDeps) {
  const { repository, clients, clock } = deps;

  /** The client a request names; refused, a page that says why. */
  async function requestClient(clientId: string | null): Promise<ClientRow> {
    if (!clientId) throw new NoRedirect("The request names no client (client_id is missing).");
    try {
      return await clients.find(clientId);
    } catch (e) {
      if (e instanceof ClientRefused) throw new NoRedirect(`This client cannot sign in here: ${e.message}.`);
      throw e;
    }
  }

  /** What the request's resource names, whoever owns it; undefined when there is no such connector or virtual server. */
  async function targetOf(binding: Binding): Promise<Target | undefined> {
    if (binding.virtual_server_id !== undefined) {
      const server = await deps.virtualServer(binding.virtual_server_id);
      const url = resourceOf(deps.issuer(), binding);
      return server && { owner_id: server.owner_id, consent: { kind: "virtual server", name: server.name, url } };
    }
    const connector = await deps.connector(binding.connector_id);
    return (
      connector && {
        owner_id: connector.owner_id,
        consent: { kind: "connector", name: connector.metadata.name ?? connector.url, url: connector.url },
      }
    );
  }

  /** A single-use code for the client, under a new grant by `user` of the request's connector or virtual server. */
  async function grantCode(params: AuthorizationParams, user: Principal): Promise<string> {
    const binding = bindingOf(params);
    const grant: GrantRow = {
      id: deps.newId(),
      user_id: user.id,
      client_id: params.client_id,
      connector_id: binding.connector_id ?? null,
      virtual_server_id: binding.virtual_server_id ?? null,
      scope: params.scope,
      created_at: clock(),
      last_used_at: null,
    };
    await repository.insertGrant(grant);
    const code = newSecret();
    await repository.insertToken({
      digest: digest(code),
      grant_id: grant.id,
      kind: "code",
      code_challenge: params.code_challenge,
      redirect_uri: params.redirect_uri,
      expires_at: clock() + CODE_TTL_MS,
      used_at: null,
      created_at: clock(),
    });
    await repository.touchClient(params.client_id, clock());
    return code;
  }

  return {
    /** Checks an authorization request, and keeps nothing: a request is kept only once a person signed in for it. */
    async checkRequest(query: URLSearchParams): Promise<CheckedRequest> {
      onPage(() => checkParameters(query));
      const client = await requestClient(query.get("client_id"));
      const redirectUri = query.get("redirect_uri");
      // OAuth 2.1 §4.1.1: the redirect URI is compared to the registered ones as strings, exactly.
      if (!redirectUri || !client.metadata.redirect_uris.includes(redirectUri)) {
        throw new NoRedirect(
          "The request's redirect_uri is not one the client registered, so the answer cannot be sent back to it.",
        );
      }
      const flow = onPage(() => checkCodeRequest(query, deps.issuer()));
      return {
        client,
        params: {
          client_id: client.client_id,
          redirect_uri: redirectUri,
          state: query.get("state"),
          ...flow,
          scope: grantedScope(query.get("scope")),
        },
      };
    },

    /**
     * A person signed in for a checked request: it is kept (their oldest go beyond MAX_PENDING_REQUESTS_PER_USER),
     * and consent is theirs to give on the page the answered handle names, which shows the connector or virtual
     * server only if it is theirs to give.
     */
    async signedIn({ client, params }: CheckedRequest, user: Principal): Promise<{ handle: string; target: ConsentTarget }> {
      await clients.remember(client);
      const handle = newSecret();
      await repository.saveRequest(
        { handle_digest: digest(handle), params, user_id: user.id, expires_at: clock() + REQUEST_TTL_MS },
        MAX_PENDING_REQUESTS_PER_USER,
      );
      const target = await targetOf(bindingOf(params));
      return { handle, target: mayGrant(target, user) ? target.consent : undefined };
    },

    /**
     * The person's answer. Allowed: a grant for the connector or virtual server (theirs, or any for an administrator)
     * and a single-use code for the client; denied, or not theirs to give: an error for the client. Either way the
     * request is used up.
     */
    async answer(handle: string, allow: boolean): Promise<Redirect> {
      const row = await repository.takeRequest(digest(handle));
      const user = row?.user_id ? await deps.user(row.user_id) : undefined;
      if (!row || !user || row.expires_at <= clock())
        throw new NoRedirect("This page has expired or was already used: start again from the application.");
      const { params } = row;
      if (!allow) return redirect(deps.issuer(), params, new AccessDenied("The person declined").toResponseObject());
      // RFC 8707 §2: a resource the person may not give (another's, or none) is an invalid_target, whichever it is.
      if (!mayGrant(await targetOf(bindingOf(params)), user)) {
        const refused = new InvalidTarget("the resource is not a connector or virtual server of the person who signed in");
        return redirect(deps.issuer(), params, refused.toResponseObject());
      }
      return redirect(deps.issuer(), params, { code: await grantCode(params, user) });
    },
  };
}
export type AuthorizationEndpoint = ReturnType<typeof createAuthorizationEndpoint>;
