import { Elysia } from "elysia";
import { createClients } from "./oauth-server/clients";
import { createAuthServerRepository } from "./oauth-server/repository";
import { authServerRoutes } from "./oauth-server/routes";
import { createAuthServer } from "./oauth-server/service";
import { ACCESS_TOKEN_PREFIX } from "./oauth-server/model";
import { InvalidToken, Unauthorized } from "./http-errors/errors";
import { Problem } from "./http-errors/model";
import { createProviderRepository } from "./a2a/repository";
import { a2aRoutes, providerRoutes } from "./a2a/routes";
import { createProviderService } from "./a2a/service";
import type { Config } from "./config/load";
import { createConnectionService } from "./connector-api/connections";
import { createConnectorCredentials } from "./connectors/credentials";
import { createConnectorRepository, type ConnectorRow } from "./connectors/repository";
import { connectorRoutes } from "./connector-api/routes";
import { CONNECTOR_STATES } from "./connectors/model";
import { createConnectorService, isManaged } from "./connectors/service";
import { createTransitions } from "./connectors/transitions";
import type { Store } from "./db/store";
import { createAuditRepository } from "./audit/repository";
import { auditRoutes } from "./audit/routes";
import { createAuditService } from "./audit/service";
import { createAuditWriter } from "./audit/writer";
import { createDeployments } from "./deployments/service";
import { createEventFeed } from "./events/feed";
import { createWebhookCursorRepository } from "./events/repository";
import { eventRoutes } from "./events/routes";
import { createEventStreams, EVENT_RETENTION_MS } from "./events/stream";
import { createWebhooks, webhookKey } from "./events/webhooks";
import { createJobLeases, leased } from "./scheduler/leases";
import { consoleRoutes } from "./console/routes";
import { docsPlugin } from "./docs/plugin";
import { healthRoutes, type Readiness } from "./health/routes";
import type { FetchLike } from "./http/fetch";
import { createCors } from "./http/cors";
import { crossSitePlugin } from "./http/cross-site";
import { apiBodyPlugin } from "./http/json-body";
import { problemPlugin } from "./http/problem-plugin";
import type { RequestIds } from "./http/request-id";
import { registerProcessMetrics } from "./metrics/process";
import { createRegistry } from "./metrics/registry";
import { metricsRoutes } from "./metrics/routes";
import { createAuthorization } from "./oauth-client/authorization";
import { createCallback } from "./oauth-client/callback";
import { createOAuthClient, REFRESH_OUTCOMES } from "./oauth-client/client";
import { createOAuthHttp } from "./oauth-client/http";
import { createOAuthRepository } from "./oauth-client/repository";
import { oauthRoutes } from "./oauth-client/routes";
import type { Logger } from "./observability/logger";
import { createTracing } from "./observability/tracing";
import { createPresetCatalog } from "./presets/catalog";
import { presetRoutes } from "./presets/routes";
import { proxyEntry } from "./proxy/entry";
import { proxyRoutes } from "./proxy/routes";
import { createProxyService } from "./proxy/service";
import { createStreamLimits } from "./proxy/stream-limits";
import { createHeldBytes } from "./proxy/held-bytes";
import { createCredentialCheck } from "./proxy/credential-check";
import { mcpHandshake } from "./upstream/handshake";
import { createTargets } from "./proxy/target";
import { forwardOptions } from "./forward/forward";
import type { Runtime } from "./runtime/runtime";
import type { Job } from "./scheduler/scheduler";
import type { Sealer } from "./secrets/sealer";
import { guardedFetch } from "./security/guarded-fetch";
import { createUrlGuard } from "./security/url-guard";
import { authPlugin } from "./users/auth-plugin";
import { createAccessWatch } from "./users/access-watch";
import { authenticateRequests, createAuthenticator } from "./users/authenticate";
import { createFailureLimit, UNBRAKED, type Brake } from "./users/failure-limit";
import { createUserRepository } from "./users/repository";
import { userRoutes } from "./users/routes";
import { createUserService } from "./users/service";
import { sessionRoutes } from "./users/session-routes";
import { createSessions } from "./users/sessions";
import { VERSION } from "./version";

/** Everything the services take from outside: replaced in tests by an in-memory database, a stepped clock, a fake fetch. */
export type Deps = {
  config: Config;
  store: Store;
  sealer: Sealer;
  log: Logger;
  clock: () => number;
  /** Waits that a test may want to step (another process's refresh lease). */
  sleep: (ms: number) => Promise<void>;
  newId: () => string;
  fetch: FetchLike;
  /** The address a request came from (the server knows it; a test may say), for limits per client. */
  clientAddress: (request: Request) => string | undefined;
  /** Resolves a host name to its addresses for the URL guard (the system resolver unless a test gives one). */
  resolveHost?: (host: string) => Promise<string[]>;
  /** The URL users reach the service at; known only once the server listens when the port is 0. */
  publicUrl: () => string;
  readiness: Readiness;
  requestIds: RequestIds;
  runtime: Runtime;
};

/**
 * The composition root: builds every service from `deps`, once, and wires the few that call each other. Nothing
 * under src/ imports this file but the CLI (cli/serve.ts); tests build apps with it.
 */
export function createServices(deps: Deps) {
  const { config, sealer, clock, newId, log } = deps;
  const users = createUserRepository(deps.store, clock);
  // Every change to a connector writes an event (connectors/repository.ts); this process's readers hear of it at once.
  const connectorRows = createConnectorRepository(deps.store, clock, () => feed.kick());
  const feed = createEventFeed({ repository: connectorRows, clock, log: log.child({ component: "events" }) });
  const presets = createPresetCatalog(config.presets);
  const authServerRows = createAuthServerRepository(deps.store, clock);
  const failureLimit = createFailureLimit({
    clock,
    maxFailures: config.auth.maxFailures,
    maxAddressFailures: config.auth.maxAddressFailures,
    windowMs: config.auth.failureWindowMs,
  });
  // Basic, API tokens, and the authorization server's access tokens (each good at one connector's proxy only).
  // An expired or revoked one is an invalid_token (RFC 6750 §3.1), the client's cue to refresh. No token counts toward
  // AUTH__MAX_FAILURES: 256 random bits are not guessed, and a client racing its refresh must not lock itself out.
  const authenticator = createAuthenticator({
    users,
    clock,
    otherBearer: async (token) => {
      if (!token.startsWith(ACCESS_TOKEN_PREFIX)) return undefined;
      const principal = await authServer.verify(token);
      if (!principal) throw new InvalidToken("The access token has expired or was revoked: refresh it, or authorize again");
      return principal;
    },
  });
  const authenticateProxy = authenticateRequests(authenticator, failureLimit, deps.clientAddress);
  const sessions = createSessions({ users, clock, publicUrl: deps.publicUrl });
  // The API's also take the console's session cookie (never the proxy: MCP clients use no cookies).
  const authenticateApi = authenticateRequests(authenticator, failureLimit, deps.clientAddress, (request) =>
    sessions.principal(request),
  );
  /** The API's: an access token for a connector's proxy is not a credential for the API. */
  const authenticate = async (request: Request) => {
    const principal = await authenticateApi(request);
    if (principal.connector !== undefined)
      throw new Unauthorized("This access token is for one connector's MCP proxy only, not for the API");
    return principal;
  };
  /** A user name and password typed into one of the service's pages: a Basic credential in all but name, under the same brake on failures. */
  // Long-lived streams end within a second of their caller losing access: its credential is authenticated again.
  const accessWatch = createAccessWatch({
    recheck: async ({ authorization, cookie }) =>
      authorization === null
        ? sessions.person(new Request(deps.publicUrl(), { headers: cookie === null ? {} : { cookie } }))
        : authenticator(authorization, UNBRAKED),
    onError: (e) => log.warn("could not check a stream's access again", { error: e.message }),
  });
  const signIn = (request: Request, username: string, password: string) =>
    authenticator(`Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`, brakeFor(request));
  /** The failure brake for the client of one request: its address, and its wrong passwords (AUTH__MAX_FAILURES). */
  function brakeFor(request: Request): Brake {
    return failureLimit.brake(() => deps.clientAddress(request));
  }
  const urlGuard = createUrlGuard({
    blockPrivate: config.security.blockPrivateNetworks,
    clock,
    ...(deps.resolveHost && { resolve: deps.resolveHost }),
  });
  const upstreamFetch = guardedFetch(deps.fetch, urlGuard);
  const metrics = createRegistry();
  const cors = createCors(config.cors.allowedOrigins);
  // Every state, at 0 when no connector is in it: a scraper wants stable series.
  metrics.gauge(
    "connectors",
    "Connectors by state",
    "state",
    async () => (await connectorRows.countByState()).map(({ state, count }) => [state, count]),
    CONNECTOR_STATES,
  );
  registerProcessMetrics(metrics, { version: VERSION });

  const credentials = createConnectorCredentials(sealer);
  // This process among the replicas sharing the store: the owner of the leases it takes.
  const processId = newId();
  const oauth = createOAuthClient({
    repository: createOAuthRepository(deps.store),
    sealer,
    http: createOAuthHttp(upstreamFetch, config.security.blockPrivateNetworks),
    clock,
    sleep: deps.sleep,
    publicUrl: deps.publicUrl,
    processId,
    log: log.child({ component: "oauth" }),
    refreshes: metrics.counter(
      "oauth_token_refreshes_total",
      "Refreshes of connectors' upstream OAuth tokens by this process, by outcome",
      "outcome",
      REFRESH_OUTCOMES,
    ),
  });
  // When a connection ends, what lives outside the connector's row goes with it: its grant and its deployment.
  const transitions = createTransitions({
    connectors: connectorRows,
    sealer,
    clock,
    log: log.child({ component: "connectors" }),
    async ended(row) {
      if (isManaged(row)) deployments.remove(row.id); // in the background: a runtime can be slow
      await oauth
        .forget(row.id)
        .catch((e) => log.warn("could not forget an OAuth grant", { connector_id: row.id, error: (e as Error).message }));
    },
  });
  const deployments = createDeployments({
    runtime: deps.runtime,
    presets,
    connectors: connectorRows,
    credentials,
    transitions,
    clock,
    log: log.child({ component: "runtime" }),
    sharedStore: deps.store.dialect === "postgres",
  });
  const authorization = createAuthorization({ oauth, connectors: connectorRows, credentials, transitions, upstreamFetch });
  const connectors = createConnectorService({
    connectors: connectorRows,
    presets,
    sealer,
    clock,
    newId,
    urlGuard,
    maxPerUser: config.connector.maxPerUser,
  });
  const connections = createConnectionService({
    connectors,
    transitions,
    authorization,
    oauth,
    deployments,
    upstreamFetch,
    urlGuard,
    allowedRedirectOrigins: () => [new URL(deps.publicUrl()).origin, ...config.oauth.allowedRedirectOrigins],
  });
  const relaySettings = {
    fetch: upstreamFetch,
    headersTimeoutMs: config.proxy.upstreamTimeoutMs,
    maxBodyBytes: config.proxy.maxBodyBytes,
  };
  // OpenTelemetry (the standard OTEL_* variables): off unless an endpoint is set. Connects and refreshes get a span each.
  const tracing = config.tracing ? createTracing(config.tracing) : undefined;
  if (tracing) {
    const { connect } = connections;
    connections.connect = (caller, id, body) =>
      tracing.around("connector.connect", { "mcp.connector.id": id, "enduser.id": caller.id }, () => connect(caller, id, body));
    const { refresh } = authorization;
    authorization.refresh = (id, rejected) =>
      tracing.around("connector.oauth.refresh", { "mcp.connector.id": id }, () => refresh(id, rejected));
  }
  // The audit trail: records queued by the proxy, written in batches off the request path.
  const auditRows = createAuditRepository(deps.store);
  const audit = createAuditService({
    repository: auditRows,
    writer: createAuditWriter(auditRows, log.child({ component: "audit" })),
    sealer,
    clock,
    newId,
    capture: config.audit.capture,
    retentionMs: config.audit.retentionMs,
    maxRecords: config.audit.maxRecords,
  });
  /** Records a listing's tool pins (connectors/repository.ts) and says in the log what differs from the approved. */
  async function recordPins(row: ConnectorRow, seen: { name: string; digest: string }[], complete: boolean): Promise<void> {
    try {
      const changed = await connectorRows.recordToolPins(row.id, seen, complete, clock());
      const changes = changed?.tool_changes ?? [];
      if (changes.length > 0) {
        log.warn("tool definitions differ from the approved ones", {
          connector_id: row.id,
          owner_id: row.owner_id,
          tools: changes.map((c) => `${c.name} (${c.change})`),
        });
      }
    } catch (e) {
      log.warn("could not record tool pins", { connector_id: row.id, error: (e as Error).message });
    }
  }
  const pinWrites = new Map<string, Promise<void>>();
  const proxy = createProxyService({
    ...(config.audit.enabled && { audit }),
    ...(tracing && { tracing }),
    responses: metrics.statusCounter(
      "mcp_proxy_responses_total",
      "MCP proxy requests by the status the client got, the service's own answers (401, 404, 409, 413, 502, 504 …) included",
    ),
    connectors,
    pins: {
      list: (id) => connectorRows.toolPins(id),
      // One connector's listings are recorded in the order they were answered (a client walks the pages in order, and
      // the first whole walk is the approved baseline): each waits for the one before.
      record(row, seen, complete) {
        const previous = pinWrites.get(row.id) ?? Promise.resolve();
        const next = previous.then(() => recordPins(row, seen, complete));
        pinWrites.set(row.id, next);
        void next.then(() => {
          if (pinWrites.get(row.id) === next) pinWrites.delete(row.id);
        });
        return next;
      },
    },
    transitions,
    authorization,
    targets: createTargets({ runtime: deps.runtime, oauth, credentials }),
    limits: createStreamLimits({ perUser: config.proxy.maxStreamsPerUser, perConnector: config.proxy.maxStreamsPerConnector }),
    held: createHeldBytes(config.proxy),
    credentialCheck: createCredentialCheck({ handshake: mcpHandshake, clock }),
    clock,
    watch: accessWatch,
    forward: forwardOptions(
      metrics,
      "mcp",
      "MCP server",
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      relaySettings,
    ),
  });
  // The service as the authorization server of its own proxy URLs (oauth-server/): MCP clients that know only a URL.
  const authServerClients = createClients({
    repository: authServerRows,
    // A metadata document's URL comes from anyone who opens the authorization endpoint: it must be a public address,
    // whatever SECURITY__BLOCK_PRIVATE_NETWORKS says for the URLs users give (else the service fetches inside the network for strangers).
    fetch: guardedFetch(
      deps.fetch,
      createUrlGuard({ blockPrivate: true, clock, ...(deps.resolveHost && { resolve: deps.resolveHost }) }),
    ),
    clock,
    newId,
    maxRegistrations: config.authServer.maxRegistrations,
    maxRegistrationsPerAddress: config.authServer.maxRegistrationsPerAddress,
  });
  const authServer = createAuthServer({
    repository: authServerRows,
    clients: authServerClients,
    clock,
    newId,
    publicUrl: deps.publicUrl,
    connector: (id) => connectorRows.findById(id),
    user: async (id) => {
      const user = await users.findById(id);
      return user && { id: user.id, username: user.username, role: user.role };
    },
  });
  const providers = createProviderService({
    providers: createProviderRepository(deps.store),
    fetch: upstreamFetch,
    urlGuard,
    clock,
    newId,
    publicUrl: deps.publicUrl,
    refreshAfterMs: config.a2a.cardRefreshMs,
  });
  /**
   * What the scheduler runs on every tick (scheduler/scheduler.ts), in this order. Replicas share the work: the jobs
   * that act outside the store run on one replica at a time (a lease each); token refresh leases each grant.
   */
  const leases = { leases: createJobLeases(deps.store), owner: processId, clock };
  const webhooks =
    config.webhooks.urls.length > 0
      ? createWebhooks({
          urls: config.webhooks.urls,
          key: webhookKey(config.webhooks.secret!),
          cursors: createWebhookCursorRepository(deps.store),
          events: connectorRows,
          fetch: upstreamFetch,
          clock,
          log: log.child({ component: "webhooks" }),
          exclusive: async (round) => void (await leased({ name: "deliver-webhooks", run: round }, leases).run()),
        })
      : undefined;
  if (webhooks) feed.subscribe(() => void webhooks.deliver());
  const jobs: Job[] = [
    leased({ name: "reconcile-deployments", run: () => deployments.reconcile() }, leases),
    { name: "expire-oauth-states", run: async () => void (await oauth.expireStates()) },
    { name: "expire-authorization-server-records", run: async () => void (await authServer.cleanUp()) },
    { name: "expire-console-sessions", run: async () => void (await sessions.cleanUp()) },
    { name: "expire-audit-records", run: async () => void (await audit.cleanUp()) },
    {
      name: "expire-connector-events",
      run: async () => void (await connectorRows.deleteEventsBefore(clock() - EVENT_RETENTION_MS)),
    },
    ...(webhooks ? [{ name: "deliver-webhooks", run: () => webhooks.deliver() }] : []),
    leased({ name: "refresh-agent-cards", run: () => providers.refreshStale() }, leases),
    {
      name: "refresh-oauth-tokens",
      run: async () => {
        for (const id of await oauth.dueGrants(20)) await authorization.refresh(id);
      },
    },
  ];
  return {
    users: createUserService({
      users,
      clock,
      newId,
      maxTokensPerUser: config.auth.maxTokensPerUser,
      // A deleted user's connectors go as DELETE would take them: deployments removed, upstream grants revoked.
      async beforeDelete(userId) {
        const owner = { id: userId, username: "", role: "user" as const };
        for (
          let rows = await connectorRows.page(userId, 50, undefined);
          rows.length > 0;
          rows = await connectorRows.page(userId, 50, undefined)
        ) {
          for (const row of rows) await connections.delete(owner, row.id);
        }
      },
      grants: {
        count: async (userId) => (await authServer.grantsOf(userId)).length,
        async revokeAll(userId) {
          let revoked = 0;
          for (const grant of await authServer.grantsOf(userId)) if (await authServer.revokeGrant(userId, grant.id)) revoked++;
          return revoked;
        },
      },
    }),
    authenticate,
    authenticateProxy,
    authServer: { server: authServer, cors, clients: authServerClients, signIn, clientAddress: deps.clientAddress },
    sessions,
    signIn,
    brakeFor,
    connectors,
    connections,
    authorization,
    callback: createCallback({
      authorization,
      connector: (id) => connectorRows.findById(id),
      username: async (id) => (await users.findById(id))?.username,
      signedIn: (request) => sessions.person(request),
      signIn: (request, username, password) => signIn(request, username, password),
    }),
    deployments,
    presets,
    proxy,
    providers,
    audit,
    tracing,
    accessWatch,
    eventStreams: createEventStreams({ feed, repository: connectorRows, watch: accessWatch }),
    events: { feed, webhooks },
    proxyEntry: proxyEntry({
      proxy,
      authenticate: authenticateProxy,
      publicUrl: deps.publicUrl,
      log,
      requestId: (request) => deps.requestIds.get(request),
      cors,
    }),
    a2aForward: forwardOptions(metrics, "a2a", "agent", [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30], relaySettings),
    metrics,
    jobs,
  };
}
export type Services = ReturnType<typeof createServices>;

export function buildApp(deps: Deps, services: Services = createServices(deps)) {
  const auth = authPlugin(services.authenticate);
  const apiBody = apiBodyPlugin({ maxBytes: deps.config.api.maxBodyBytes, authenticate: services.authenticate });
  // normalize: false makes `additionalProperties: false` reject unknown fields (a typo is a 422, not silently dropped).
  return new Elysia({ normalize: false })
    .use(problemPlugin(deps.log, deps.requestIds))
    .use(crossSitePlugin(deps.publicUrl))
    .use(docsPlugin(VERSION))
    .use(consoleRoutes())
    .use(healthRoutes(deps.readiness, deps.store))
    .use(
      metricsRoutes(services.metrics, {
        token: deps.config.metrics.token,
        problem: Problem,
        refuse: (detail, challenge) => Object.assign(new Unauthorized(detail), { headers: { "www-authenticate": challenge } }),
      }),
    )
    .use(userRoutes(services.users, auth, apiBody, services.brakeFor))
    .use(sessionRoutes(services, auth, apiBodyPlugin({ maxBytes: deps.config.api.maxBodyBytes, authenticate: null })))
    .use(presetRoutes(services.presets, auth))
    .use(oauthRoutes(services.callback, deps.publicUrl))
    .use(eventRoutes(services.eventStreams, auth))
    .use(auditRoutes(services.audit, auth))
    .use(connectorRoutes(services.connectors, services.connections, auth, apiBody))
    .use(proxyRoutes(services.proxyEntry))
    .use(authServerRoutes(services.authServer, auth))
    .use(providerRoutes(services.providers, auth, apiBody))
    .use(a2aRoutes(services.providers, services.authenticate, auth, services.a2aForward, services.accessWatch));
}
export type App = ReturnType<typeof buildApp>;
