import { Elysia } from "elysia";
import { createClients } from "./oauth-server/clients";
import { createAuthServerRepository } from "./oauth-server/repository";
import { authServerRoutes } from "./oauth-server/routes";
import { createAuthServer } from "./oauth-server/service";
import { ACCESS_TOKEN_PREFIX } from "./oauth-server/model";
import { Unauthorized } from "./http-errors/errors";
import { Problem } from "./http-errors/model";
import { createProviderRepository } from "./a2a/repository";
import { a2aRoutes, providerRoutes } from "./a2a/routes";
import { createProviderService } from "./a2a/service";
import type { Config } from "./config/load";
import { connectionEnded, createConnectionService } from "./connector-api/connections";
import { createSealedColumns } from "./connectors/sealed-columns";
import { registerConnectorMetrics } from "./connectors/metrics";
import { createPinRecords } from "./connectors/pin-records";
import { createConnectorRepository } from "./connectors/repository";
import { connectorRoutes } from "./connector-api/routes";
import { createConnectorService } from "./connectors/service";
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
import { createEventStreams, expireEvents } from "./events/stream";
import { createWebhooks, webhookKey } from "./events/webhooks";
import { createJobLeases, withLeases } from "./scheduler/leases";
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
import { createOAuthClient } from "./oauth-client/client";
import { createOAuthHttp } from "./oauth-client/http";
import { createOAuthRepository } from "./oauth-client/repository";
import { oauthRoutes } from "./oauth-client/routes";
import type { Logger } from "./observability/logger";
import { createTracing } from "./observability/tracing";
import { createPresetCatalog } from "./presets/catalog";
import { presetRoutes } from "./presets/routes";
import { proxyEntry } from "./proxy/entry";
import { createServerTools } from "./proxy/server-tools";
import { proxyRoutes } from "./proxy/routes";
import { createProxyService, type ProxyService } from "./proxy/service";
import { createStreamLimits } from "./proxy/stream-limits";
import { createToolMetrics } from "./proxy/tool-metrics";
import { createRateLimiter } from "./rate-limits/service";
import { createRateOverrides } from "./users/rate-overrides";
import { createHeldBytes } from "./proxy/held-bytes";
import { createCredentialCheck } from "./proxy/credential-check";
import { mcpHandshake } from "./upstream/handshake";
import { createEraBridges } from "./era-bridge/bridges";
import { createHandoffStore } from "./era-bridge/handoff-store";
import { sweepHandoffs } from "./era-bridge/handoffs";
import { createLegacySessions, type PolicyHop } from "./era-bridge/legacy-sessions";
import { createLegacySessionStore } from "./era-bridge/legacy-session-store";
import { createTargets } from "./proxy/target";
import { forwardOptions } from "./forward/forward";
import type { Runtime } from "./runtime/runtime";
import type { Sealer } from "./secrets/sealer";
import { guardedFetch } from "./security/guarded-fetch";
import { createUrlGuard } from "./security/url-guard";
import { authPlugin } from "./users/auth-plugin";
import { createAccessWatch } from "./users/access-watch";
import { createAuthentication } from "./users/authentication";
import { createFailureLimit } from "./users/failure-limit";
import { createUserRepository } from "./users/repository";
import { userRoutes } from "./users/routes";
import { createUserService, findPrincipal } from "./users/service";
import { sessionRoutes } from "./users/session-routes";
import { createSessions } from "./users/sessions";
import { VERSION } from "./version";
import { createVirtualServerRepository } from "./virtual-servers/repository";
import { createConflictNotes } from "./virtual-servers/conflicts";
import { createVirtualEndpoint } from "./virtual-servers/endpoint";
import { createMemberFailures } from "./virtual-servers/member-failures";
import { createVirtualServerMetrics } from "./virtual-servers/metrics";
import { virtualEntry, virtualMcpRoutes } from "./virtual-servers/mcp-routes";
import { createSessionStore } from "./virtual-servers/session-store";
import { virtualServerRoutes } from "./virtual-servers/routes";
import { createClientSessions } from "./virtual-servers/sessions";
import { createVirtualServerService } from "./virtual-servers/service";

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
 * The composition root: builds every service from `deps`, once, and hands each the others it calls. Wiring only: the
 * rules live in the features (docs/development.md "Layout"). Nothing under src/ imports this file but the CLI (cli/serve.ts);
 * tests build apps with it.
 */
export function createServices(deps: Deps) {
  const { config, clock, newId, log } = deps;
  const base = createBase(deps);
  const { connectorRows, metrics, cors, upstreamFetch, tracing } = base;
  const access = createAccess(deps, base);
  const { authServer, authentication, sessions, accessWatch } = access;
  // The parts that reach a connector's server as the caller (a virtual server's members, the era bridges, the tools
  // editor) go through the proxy's own service, made below: its credentials, policy, limits and audit apply.
  let proxy: ProxyService | undefined;
  const hop: PolicyHop = (caller, id, request, options) => proxy!.handle(caller, id, request, { ...options, internal: true });
  // A parked call's requestState names the bridges holding it; replicas on one PostgreSQL store hand a retry that
  // reached the wrong one over to them through the store (era-bridge/handoffs.ts).
  const handoffRows = deps.store.dialect === "postgres" ? createHandoffStore(deps.store, deps.sealer) : undefined;
  const parkedCalls: ParkedCallsOf = (kind) => ({
    kind,
    inputTimeoutMs: config.proxy.inputTimeoutMs,
    sealer: deps.sealer,
    holder: `${base.processId}/${kind}`,
    ...(handoffRows && { handoffs: { rows: handoffRows, newId } }),
  });
  const virtual = createVirtualParts(deps, base, hop, parkedCalls);
  const parts = createConnectorParts(deps, base, virtual.servers.removeConnector);
  const { oauth, deployments, authorization, connectors, connections } = parts;
  const forwardSettings = {
    fetch: upstreamFetch,
    headersTimeoutMs: config.proxy.upstreamTimeoutMs,
    maxBodyBytes: config.proxy.maxBodyBytes,
  };
  const audit = createAudit(deps);
  const rateLimiter = createRateLimiter({ store: deps.store, clock });
  const rateOverrides = createRateOverrides(base.users, clock);
  proxy = createProxy(deps, base, { access, parts, audit, hop, parkedCalls, forwardSettings, rateLimiter, rateOverrides });
  const providers = createProviderService({
    providers: createProviderRepository(deps.store),
    fetch: upstreamFetch,
    urlGuard: base.urlGuard,
    clock,
    newId,
    publicUrl: deps.publicUrl,
    refreshAfterMs: config.a2a.cardRefreshMs,
  });
  const webhooks = createWebhooksIfAny(deps, base);
  const entryDeps = {
    authenticate: authentication.proxy,
    publicUrl: deps.publicUrl,
    log,
    requestId: (request: Request) => deps.requestIds.get(request),
    cors,
  };
  return {
    users: createUserService({
      users: base.users,
      clock,
      newId,
      maxTokensPerUser: config.auth.maxTokensPerUser,
      rateOverrides,
      // A deleted user's virtual servers go first, each with its event; then their connectors as DELETE takes them.
      beforeDelete: async (userId) => {
        await virtual.servers.deleteAllOf(userId);
        await connections.deleteAllOf(userId);
      },
      grants: { of: authServer.grantsOf, revoke: authServer.revokeGrant },
    }),
    authentication,
    authServer: {
      server: authServer,
      cors,
      clients: access.authServerClients,
      signIn: authentication.signIn,
      clientAddress: deps.clientAddress,
    },
    sessions,
    connectors,
    connections,
    virtualServers: virtual.servers,
    authorization,
    callback: createCallback({
      authorization,
      connector: connectorRows.findById,
      user: findPrincipal(base.users),
      signedIn: sessions.person,
      signIn: authentication.signIn,
    }),
    deployments,
    presets: base.presets,
    proxy,
    // The console's tool policy editor lists the server's tools before the policy (proxy/server-tools.ts).
    serverTools: createServerTools((caller, id, request) => hop(caller, id, request, { policy: false })),
    providers,
    audit,
    tracing,
    accessWatch,
    eventStreams: createEventStreams({ feed: base.feed, repository: connectorRows, watch: accessWatch }),
    events: { feed: base.feed, webhooks },
    proxyEntry: proxyEntry({ proxy, ...entryDeps }),
    virtualEntry: virtualEntry({
      endpoint: virtual.endpoint,
      modern: (caller, id, request) => virtual.bridges.serve(caller, id, request),
      watch: accessWatch,
      ...entryDeps,
    }),
    virtualBridges: virtual.bridges,
    a2aForward: forwardOptions(metrics, "a2a", "agent", [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30], forwardSettings),
    metrics,
    /** What the scheduler runs on every tick (scheduler/scheduler.ts), in this order; each job is its feature's. */
    jobs: withLeases(
      [
        deployments.job,
        oauth.job,
        authServer.job,
        sessions.job,
        audit.job,
        expireEvents(connectorRows, clock),
        virtual.sessions.job,
        ...(webhooks ? [webhooks.job] : []),
        providers.job,
        authorization.job,
        rateLimiter.job,
        ...(handoffRows ? [sweepHandoffs(handoffRows, clock, config.proxy.inputTimeoutMs, log)] : []),
      ],
      base.leases,
    ),
  };
}
export type Services = ReturnType<typeof createServices>;

/** What every part uses: the stores' repositories everyone reads, metrics, the guarded network, tracing. */
function createBase(deps: Deps) {
  const { config, clock, log } = deps;
  // Every change to a connector writes an event (connectors/repository.ts); this process's readers hear of it at once.
  const connectorRows = createConnectorRepository(deps.store, clock, () => feed.kick());
  const feed = createEventFeed({ repository: connectorRows, clock, log: log.child({ component: "events" }) });
  const metrics = createRegistry();
  registerConnectorMetrics(metrics, connectorRows);
  registerProcessMetrics(metrics, { version: VERSION });
  const urlGuard = createUrlGuard({
    blockPrivate: config.security.blockPrivateNetworks,
    clock,
    ...(deps.resolveHost && { resolve: deps.resolveHost }),
  });
  // This process among the replicas sharing the store: the owner of the leases it takes.
  const processId = deps.newId();
  return {
    users: createUserRepository(deps.store, clock),
    connectorRows,
    // Virtual servers write their events on the connectors' feed, and kick it as connectors do.
    virtualServerRows: createVirtualServerRepository(deps.store, () => feed.kick()),
    feed,
    presets: createPresetCatalog(config.presets),
    metrics,
    cors: createCors(config.cors.allowedOrigins),
    urlGuard,
    upstreamFetch: guardedFetch(deps.fetch, urlGuard),
    // OpenTelemetry (the standard OTEL_* variables): off unless an endpoint is set.
    tracing: config.tracing ? createTracing(config.tracing) : undefined,
    processId,
    leases: { leases: createJobLeases(deps.store), owner: processId, clock },
  };
}
type Base = ReturnType<typeof createBase>;

/** The era bridges' parked calls, for the bridges of connectors or of virtual servers (era-bridge/bridges.ts). */
type ParkedCallsOf = (
  kind: "connectors" | "virtual-servers",
) => Pick<Parameters<typeof createEraBridges>[0], "kind" | "inputTimeoutMs" | "sealer" | "holder" | "handoffs">;

/**
 * Virtual servers: the resource, its client sessions (members reached through `hop`, as the caller), its MCP endpoint,
 * and the bridges that serve it to 2026-07-28 clients.
 */
function createVirtualParts(deps: Deps, base: Base, hop: PolicyHop, parkedCalls: ParkedCallsOf) {
  const { config, sealer, clock, newId, log } = deps;
  const conflicts = createConflictNotes();
  const failures = createMemberFailures();
  const sessions = createClientSessions({
    exchange: (caller, id, request) => hop(caller, id, request, { policy: true }),
    newId,
    clock,
    store: createSessionStore(deps.store, sealer),
    maxPerUser: config.virtual.maxSessionsPerUser,
    log: log.child({ component: "virtual-servers" }),
  });
  const servers = createVirtualServerService({
    conflicts,
    failures,
    membersChanged: sessions.membersChanged,
    deleted: sessions.serverDeleted,
    repository: base.virtualServerRows,
    clock,
    newId,
    publicUrl: deps.publicUrl,
    maxPerUser: config.virtual.maxPerUser,
  });
  const endpoint = createVirtualEndpoint({
    servers,
    sessions,
    conflicts,
    failures,
    sealer,
    memberTimeoutMs: config.virtual.memberTimeoutMs,
    maxMessageBytes: config.proxy.maxMessageBytes,
    ...(base.tracing && { tracing: base.tracing }),
  });
  // A 2026-07-28 client of a virtual server is served over a 2025 session of it that the caller's bridge keeps.
  const bridges = createEraBridges({
    hop: (caller, id, request) => endpoint.handle(caller, id, request),
    ...parkedCalls("virtual-servers"),
    log,
    clock,
  });
  return { sessions, servers, endpoint, bridges };
}

/** The audit trail: records queued by the proxy, written in batches off the request path. */
function createAudit(deps: Deps) {
  const { config, log } = deps;
  const repository = createAuditRepository(deps.store);
  return createAuditService({
    repository,
    writer: createAuditWriter(repository, log.child({ component: "audit" })),
    sealer: deps.sealer,
    clock: deps.clock,
    newId: deps.newId,
    capture: config.audit.capture,
    retentionMs: config.audit.retentionMs,
    maxRecords: config.audit.maxRecords,
  });
}

/** The MCP proxy's service: what it reads, decides, sends and observes for each request (proxy/service.ts). */
function createProxy(
  deps: Deps,
  base: Base,
  from: {
    access: ReturnType<typeof createAccess>;
    parts: ReturnType<typeof createConnectorParts>;
    audit: ReturnType<typeof createAudit>;
    hop: PolicyHop;
    parkedCalls: ParkedCallsOf;
    forwardSettings: { fetch: FetchLike; headersTimeoutMs: number; maxBodyBytes: number };
    rateLimiter: ReturnType<typeof createRateLimiter>;
    rateOverrides: ReturnType<typeof createRateOverrides>;
  },
) {
  const { config, clock, log } = deps;
  const { metrics, tracing, connectorRows } = base;
  const { parts, hop } = from;
  return createProxyService({
    ...(config.audit.enabled && { audit: from.audit }),
    ...(tracing && { tracing }),
    responses: metrics.statusCounter(
      "mcp_proxy_responses_total",
      "MCP proxy requests by the status the client got, the service's own answers (401, 404, 409, 413, 502, 504 …) included",
    ),
    virtualServers: createVirtualServerMetrics(metrics),
    tools: createToolMetrics(metrics, config.metrics.toolsPerConnector),
    rates: {
      limiter: from.rateLimiter,
      userDefault: config.rate.userRequestsPerMinute,
      userOverride: from.rateOverrides.of,
      refused: metrics.counter(
        "mcp_rate_limited_total",
        "MCP requests a rate limit refused, by the limit that refused them (user, connector, tool)",
        "limit",
        ["user", "connector", "tool"],
      ),
    },
    connectors: parts.connectors,
    pins: createPinRecords({ connectorRows, clock, log }),
    transitions: parts.transitions,
    authorization: parts.authorization,
    targets: createTargets({ runtime: deps.runtime, oauth: parts.oauth, sealed: parts.sealed }),
    limits: createStreamLimits({ perUser: config.proxy.maxStreamsPerUser, perConnector: config.proxy.maxStreamsPerConnector }),
    held: createHeldBytes(config.proxy),
    credentialCheck: createCredentialCheck({ handshake: mcpHandshake, clock }),
    clock,
    watch: from.access.accessWatch,
    // A 2026-07-28 client of a 2025-only server is served over a session the bridge opens through the proxy itself.
    eraBridges: createEraBridges({
      hop: (caller, id, request) => hop(caller, id, request, { policy: true }),
      ...from.parkedCalls("connectors"),
      log,
      clock,
    }),
    // A 2025 client of a 2026-07-28-only server: the proxy keeps its session and sends each request on in that era.
    legacySessions: createLegacySessions({ hop, log, clock, store: createLegacySessionStore(deps.store) }),
    forward: forwardOptions(
      metrics,
      "mcp",
      "MCP server",
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      from.forwardSettings,
    ),
  });
}

/** Who may do what: sessions, the authorization server of the proxy URLs, and the credentials each way in takes. */
function createAccess(deps: Deps, base: Base) {
  const { config, clock, newId } = deps;
  // The service as the authorization server of its own MCP URLs (oauth-server/): MCP clients that know only a URL.
  const authServerRows = createAuthServerRepository(deps.store, clock);
  const authServerClients = createClients({
    repository: authServerRows,
    fetch: deps.fetch,
    ...(deps.resolveHost && { resolveHost: deps.resolveHost }),
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
    connector: base.connectorRows.findById,
    virtualServer: base.virtualServerRows.findById,
    user: findPrincipal(base.users),
  });
  const sessions = createSessions({ users: base.users, clock, publicUrl: deps.publicUrl });
  const authentication = createAuthentication({
    users: base.users,
    clock,
    failureLimit: createFailureLimit({
      clock,
      maxFailures: config.auth.maxFailures,
      maxAddressFailures: config.auth.maxAddressFailures,
      windowMs: config.auth.failureWindowMs,
    }),
    clientAddress: deps.clientAddress,
    sessions,
    accessTokens: { prefix: ACCESS_TOKEN_PREFIX, verify: authServer.verify },
  });
  const accessWatch = createAccessWatch({ recheck: authentication.recheck, log: deps.log });
  return { authServerClients, authServer, sessions, authentication, accessWatch };
}

/** A connector's connection: the OAuth client, the state machine, managed deployments, connect and delete (`leaving`: what lets go of a connector before it is deleted). */
function createConnectorParts(deps: Deps, base: Base, leaving: (connectorId: string) => Promise<void>) {
  const { config, sealer, clock, log } = deps;
  const { connectorRows, upstreamFetch, tracing } = base;
  const sealed = createSealedColumns(sealer);
  const oauth = createOAuthClient({
    repository: createOAuthRepository(deps.store),
    sealer,
    http: createOAuthHttp(upstreamFetch, config.security.blockPrivateNetworks),
    clock,
    sleep: deps.sleep,
    publicUrl: deps.publicUrl,
    processId: base.processId,
    log: log.child({ component: "oauth" }),
    metrics: base.metrics,
  });
  const transitions = createTransitions({
    connectorRows,
    sealer,
    clock,
    log: log.child({ component: "connectors" }),
    ended: (row) => ended(row),
  });
  const deployments = createDeployments({
    runtime: deps.runtime,
    presets: base.presets,
    connectorRows,
    sealed,
    transitions,
    clock,
    log: log.child({ component: "runtime" }),
    sharedStore: deps.store.dialect === "postgres",
  });
  const ended = connectionEnded({ deployments, oauth, log });
  const authorization = createAuthorization({
    oauth,
    connectorRows,
    sealed,
    transitions,
    upstreamFetch,
    ...(tracing && { tracing }),
  });
  const connectors = createConnectorService({
    connectorRows,
    presets: base.presets,
    sealer,
    clock,
    newId: deps.newId,
    urlGuard: base.urlGuard,
    maxPerUser: config.connector.maxPerUser,
  });
  const connections = createConnectionService({
    connectors,
    transitions,
    authorization,
    oauth,
    deployments,
    upstreamFetch,
    urlGuard: base.urlGuard,
    publicUrl: deps.publicUrl,
    allowedRedirectOrigins: config.oauth.allowedRedirectOrigins,
    ...(tracing && { tracing }),
    leaving,
  });
  return { sealed, oauth, transitions, deployments, authorization, connectors, connections };
}

/** Outbound webhooks for connector events, when WEBHOOKS__URLS names any. */
function createWebhooksIfAny(deps: Deps, base: Base) {
  const { urls, secret } = deps.config.webhooks;
  if (urls.length === 0) return undefined;
  return createWebhooks({
    urls,
    key: webhookKey(secret!),
    cursors: createWebhookCursorRepository(deps.store),
    events: base.connectorRows,
    feed: base.feed,
    fetch: base.upstreamFetch,
    clock: deps.clock,
    log: deps.log.child({ component: "webhooks" }),
    leases: base.leases,
  });
}

export function buildApp(deps: Deps, services: Services = createServices(deps)) {
  const authenticate = services.authentication.api;
  const auth = authPlugin(authenticate);
  const apiBody = apiBodyPlugin({ maxBytes: deps.config.api.maxBodyBytes, authenticate });
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
    .use(userRoutes(services.users, auth, apiBody, services.authentication.brakeFor))
    .use(
      sessionRoutes(
        {
          sessions: services.sessions,
          users: services.users,
          signIn: services.authentication.signIn,
          publicUrl: deps.publicUrl,
        },
        auth,
        apiBodyPlugin({ maxBytes: deps.config.api.maxBodyBytes, authenticate: null }),
      ),
    )
    .use(presetRoutes(services.presets, auth))
    .use(oauthRoutes(services.callback, deps.publicUrl))
    .use(eventRoutes(services.eventStreams, auth))
    .use(auditRoutes(services.audit, auth))
    .use(connectorRoutes(services.connectors, services.connections, services.serverTools, auth, apiBody))
    .use(proxyRoutes(services.proxyEntry))
    .use(virtualServerRoutes(services.virtualServers, auth, apiBody))
    .use(virtualMcpRoutes(services.virtualEntry))
    .use(authServerRoutes(services.authServer, auth))
    .use(providerRoutes(services.providers, auth, apiBody))
    .use(a2aRoutes(services.providers, authenticate, auth, services.a2aForward, services.accessWatch));
}
export type App = ReturnType<typeof buildApp>;
