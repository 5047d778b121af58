import { classifyFetchFailure, type FetchLike } from "../http/fetch";
import { readCapped } from "../http/read-capped";
import { addressGroup } from "../security/addresses";
import { guardedFetch } from "../security/guarded-fetch";
import { createUrlGuard } from "../security/url-guard";
import { InvalidClient, InvalidRedirectUri, InvalidRequest, TemporarilyUnavailable } from "./errors";
import {
  GRANT_TYPES_SUPPORTED,
  METADATA_DOCUMENT_MAX_BYTES,
  METADATA_DOCUMENT_TIMEOUT_MS,
  METADATA_DOCUMENT_TTL_MS,
  UNUSED_CLIENT_TTL_MS,
  type ClientMetadata,
  type RegistrationBody,
} from "./model";
import type { AuthServerRepository, ClientRow } from "./repository";
import { grantedScope } from "./scope";

/**
 * Why a client named at the authorization endpoint cannot be used, in words for the person (an error page); at the
 * token and revocation endpoints it is an invalid_client (`tokenClient`).
 */
export class ClientRefused extends Error {}

export type ClientsDeps = {
  repository: AuthServerRepository;
  /** The network, unguarded: metadata documents are fetched from public addresses only (createClients). */
  fetch: FetchLike;
  /** Resolves a host name for that check (the system resolver unless a test gives one). */
  resolveHost?: (host: string) => Promise<string[]>;
  clock: () => number;
  newId: () => string;
  /** Registered clients that never got a token, kept at most (a flood of registrations is refused beyond it). */
  maxRegistrations: number;
  /** Of those, kept at most from one client address (its group: addressGroup), so one address cannot take them all. */
  maxRegistrationsPerAddress: number;
};

/**
 * The clients of the authorization server: registered ones ([RFC 7591](https://www.rfc-editor.org/rfc/rfc7591)) and
 * those whose client_id is the https URL of their metadata document ([Client ID Metadata Documents](https://datatracker.ietf.org/doc/draft-ietf-oauth-client-id-metadata-document/),
 * as MCP authorization 2025-11-25 prefers). Only public clients: PKCE is their proof.
 */
export function createClients(deps: ClientsDeps) {
  const { repository, clock } = deps;
  // A metadata document's URL comes from anyone who opens the authorization endpoint: it must be a public address,
  // whatever SECURITY__BLOCK_PRIVATE_NETWORKS says for the URLs users give (else the service fetches inside the network for strangers).
  const fetchPublic = guardedFetch(
    deps.fetch,
    createUrlGuard({ blockPrivate: true, clock, ...(deps.resolveHost && { resolve: deps.resolveHost }) }),
  );

  /** [RFC 7591 §2](https://www.rfc-editor.org/rfc/rfc7591#section-2) redirect URIs: https, or http on a loopback host (native apps, RFC 8252 §7.3); no fragment. */
  function checkRedirectUri(uri: string): string | undefined {
    if (!URL.canParse(uri)) return `${uri} is not an absolute URL`;
    const url = new URL(uri);
    if (url.hash) return `${uri} has a fragment`;
    if (url.protocol === "https:") return undefined;
    if (url.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname)) return undefined;
    // Private-use schemes of native apps ([RFC 8252 §7.1](https://www.rfc-editor.org/rfc/rfc8252#section-7.1)): a reverse domain name with a dot.
    if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/i.test(url.protocol)) return undefined;
    return `${uri} must be https (or http on a loopback address, or a native app's own scheme)`;
  }

  function metadataOf(body: {
    redirect_uris: string[];
    client_name?: string;
    client_uri?: string;
    software_id?: string;
    software_version?: string;
  }): ClientMetadata {
    return {
      redirect_uris: body.redirect_uris,
      ...(body.client_name !== undefined && { client_name: body.client_name }),
      ...(body.client_uri !== undefined && { client_uri: body.client_uri }),
      ...(body.software_id !== undefined && { software_id: body.software_id }),
      ...(body.software_version !== undefined && { software_version: body.software_version }),
    };
  }

  /** [CIMD §3](https://datatracker.ietf.org/doc/draft-ietf-oauth-client-id-metadata-document/): an https URL with a path, no fragment, credentials or dot segments. */
  function isMetadataDocumentUrl(clientId: string): boolean {
    if (!clientId.startsWith("https://") || !URL.canParse(clientId)) return false;
    const url = new URL(clientId);
    return (
      url.pathname !== "/" &&
      !url.hash &&
      !url.username &&
      !url.password &&
      !/\/\.\.?(\/|$)/.test(clientId.slice(url.origin.length))
    );
  }

  async function fetchMetadataDocument(clientId: string): Promise<ClientMetadata> {
    let response: Response;
    try {
      response = await fetchPublic(new URL(clientId), {
        headers: { accept: "application/json" },
        redirect: "manual",
        signal: AbortSignal.timeout(METADATA_DOCUMENT_TIMEOUT_MS),
      });
    } catch (e) {
      throw new ClientRefused(
        `the client's metadata document at ${clientId} could not be fetched: ${classifyFetchFailure(e, METADATA_DOCUMENT_TIMEOUT_MS).detail}`,
      );
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new ClientRefused(`the client's metadata document at ${clientId} answered HTTP ${response.status}`);
    }
    const bytes = await readCapped(response.body, METADATA_DOCUMENT_MAX_BYTES);
    if (!bytes)
      throw new ClientRefused(
        `the client's metadata document at ${clientId} is larger than ${METADATA_DOCUMENT_MAX_BYTES} bytes`,
      );
    let document: Record<string, unknown>;
    try {
      document = JSON.parse(bytes.toString("utf8"));
    } catch {
      throw new ClientRefused(`the client's metadata document at ${clientId} is not JSON`);
    }
    const checked = checkDocument(clientId, document);
    if (typeof checked === "string") throw new ClientRefused(`the client's metadata document at ${clientId} ${checked}`);
    return checked;
  }

  /** What a metadata document must be ([CIMD §4.1](https://datatracker.ietf.org/doc/draft-ietf-oauth-client-id-metadata-document/)), for a public client of this server. */
  /** The client's metadata from its document, or what is wrong with the document. */
  function checkDocument(clientId: string, document: unknown): ClientMetadata | string {
    if (typeof document !== "object" || document === null || Array.isArray(document)) return "is not a JSON object";
    const d = document as Record<string, unknown>;
    if (d.client_id !== clientId) return "does not name itself as its client_id";
    if (
      !Array.isArray(d.redirect_uris) ||
      d.redirect_uris.length === 0 ||
      d.redirect_uris.length > 10 ||
      !d.redirect_uris.every((u): u is string => typeof u === "string")
    ) {
      return "has no list of redirect_uris (1 to 10 strings)";
    }
    const redirectUris: string[] = d.redirect_uris;
    for (const uri of redirectUris) {
      const why = checkRedirectUri(uri);
      if (why) return `has a redirect URI this server does not accept: ${why}`;
    }
    if (d.token_endpoint_auth_method !== undefined && d.token_endpoint_auth_method !== "none")
      return "asks for a client authentication this server does not offer (only none, with PKCE)";
    for (const field of ["client_name", "client_uri", "software_id", "software_version"]) {
      const value = d[field];
      if (value !== undefined && (typeof value !== "string" || value.length > 2048))
        return `has a ${field} that is not a short string`;
    }
    const text = (value: unknown) => (typeof value === "string" ? value : undefined);
    return metadataOf({
      redirect_uris: redirectUris,
      client_name: text(d.client_name),
      client_uri: text(d.client_uri),
      software_id: text(d.software_id),
      software_version: text(d.software_version),
    });
  }

  /**
   * The client by its id: registered, or its metadata document (fetched again once stale). A metadata document the
   * service has not kept is fetched but not kept (anyone can name any URL): `remember` keeps it once a person signed
   * in for it. `knownOnly`: such a client is refused instead (the token and revocation endpoints: it has no tokens).
   * Throws ClientRefused.
   */
  async function find(clientId: string, options: { knownOnly?: boolean } = {}): Promise<ClientRow> {
    const known = await repository.findClient(clientId);
    if (!isMetadataDocumentUrl(clientId)) {
      if (!known)
        throw new ClientRefused(
          `there is no client ${JSON.stringify(clientId.slice(0, 100))} (register it first, or use a client metadata document URL)`,
        );
      return known;
    }
    if (known && known.expires_at !== null && known.expires_at > clock()) return known;
    if (!known && options.knownOnly)
      throw new ClientRefused(`the client ${JSON.stringify(clientId.slice(0, 100))} has not been authorized here`);
    const row: ClientRow = {
      client_id: clientId,
      kind: "metadata-document",
      metadata: await fetchMetadataDocument(clientId),
      created_at: known?.created_at ?? clock(),
      expires_at: clock() + METADATA_DOCUMENT_TTL_MS,
      last_used_at: known?.last_used_at ?? null,
      registered_from: null,
    };
    if (known) await repository.saveMetadataClient(row);
    return row;
  }

  return {
    isMetadataDocumentUrl,
    find,

    /**
     * The client of a token or revocation request: public, so it names itself ([RFC 6749 §3.2.1](https://www.rfc-editor.org/rfc/rfc6749#section-3.2.1),
     * [RFC 7009 §2.1](https://www.rfc-editor.org/rfc/rfc7009#section-2.1)). A client known by its metadata document must
     * have been kept (a person signed in for it): no other has tokens.
     */
    async tokenClient(clientId: string | null): Promise<ClientRow> {
      if (!clientId) throw new InvalidRequest("client_id is required (public clients identify themselves)");
      try {
        return await find(clientId, { knownOnly: true });
      } catch (e) {
        if (e instanceof ClientRefused) throw new InvalidClient(e.message);
        throw e;
      }
    },

    /** A client a person signed in for: one known by its metadata document is kept from now on. */
    async remember(client: ClientRow): Promise<void> {
      if (client.kind === "metadata-document") await repository.saveMetadataClient(client);
    },

    /**
     * [RFC 7591 §3](https://www.rfc-editor.org/rfc/rfc7591#section-3): registers a public client for the client at
     * `address`, and answers its client information; throws InvalidRedirectUri, or TemporarilyUnavailable when over a bound.
     */
    async register(body: RegistrationBody, address: string | undefined) {
      for (const uri of body.redirect_uris) {
        const why = checkRedirectUri(uri);
        if (why) throw new InvalidRedirectUri(why);
      }
      const row: ClientRow = {
        client_id: deps.newId(),
        kind: "registered",
        metadata: metadataOf(body),
        created_at: clock(),
        expires_at: clock() + UNUSED_CLIENT_TTL_MS,
        last_used_at: null,
        registered_from: addressGroup(address ?? "unknown"),
      };
      const refused = await repository.registerClient(row, {
        max: deps.maxRegistrations,
        perAddress: deps.maxRegistrationsPerAddress,
      });
      if (refused) {
        const seconds = Math.max(1, Math.ceil((refused.until - clock()) / 1000));
        throw new TemporarilyUnavailable(
          refused.bound === "address"
            ? `this address has registered ${deps.maxRegistrationsPerAddress} clients that have not been used yet (AUTHSERVER__MAX_REGISTRATIONS_PER_ADDRESS); try again in ${seconds} s`
            : `this server keeps at most ${deps.maxRegistrations} registered clients that have not been used yet (AUTHSERVER__MAX_REGISTRATIONS); try again in ${seconds} s`,
          seconds,
        );
      }
      // [RFC 7591 §3.2.1](https://www.rfc-editor.org/rfc/rfc7591#section-3.2.1): the client's id and the metadata as registered (the scope it may be granted, whatever it asked).
      return {
        client_id: row.client_id,
        client_id_issued_at: Math.floor(row.created_at / 1000),
        token_endpoint_auth_method: "none",
        grant_types: GRANT_TYPES_SUPPORTED,
        response_types: ["code"],
        scope: grantedScope(body.scope ?? null),
        ...row.metadata,
      };
    },
  };
}
export type Clients = ReturnType<typeof createClients>;
