import { Elysia } from "elysia";
import type { Config } from "./config/load";
import { createConnectorRepository } from "./connectors/repository";
import { createProviderRepository } from "./a2a/repository";
import { a2aRoutes, providerRoutes } from "./a2a/routes";
import { createProviderService } from "./a2a/service";
import { createConnectionService } from "./connectors/connection";
import { connectorRoutes } from "./connectors/routes";
import { createConnectorService } from "./connectors/service";
import type { Db } from "./db/open";
import { docsPlugin } from "./docs/plugin";
import { healthRoutes, type Readiness } from "./health/routes";
import { problemPlugin } from "./http-errors/plugin";
import type { RequestIds } from "./http/server";
import type { Logger } from "./observability/logger";
import type { Runtime } from "./runtime/runtime";
import { createRegistry } from "./metrics/registry";
import { metricsRoutes } from "./metrics/routes";
import { createOAuthHttp } from "./oauth/http";
import { createOAuthRepository } from "./oauth/repository";
import { oauthRoutes } from "./oauth/routes";
import { createOAuthService } from "./oauth/service";
import { createPresetCatalog } from "./presets/catalog";
import type { ForwardOptions } from "./proxy/forward";
import { proxyRoutes } from "./proxy/routes";
import { createProxyService } from "./proxy/service";
import { guardedFetch } from "./security/guarded-fetch";
import { createUrlGuard } from "./security/url-guard";
import { presetRoutes } from "./presets/routes";
import type { Sealer } from "./secrets/sealer";
import { authPlugin } from "./users/auth-plugin";
import { createAuthenticator } from "./users/authenticate";
import { createUserRepository } from "./users/repository";
import { userRoutes } from "./users/routes";
import { createUserService } from "./users/service";
import { VERSION } from "./version";

/** A plain fetch, as the MCP SDK's FetchLike: injectable for tests. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export type Deps = {
  config: Config;
  db: Db;
  sealer: Sealer;
  log: Logger;
  clock: () => number;
  newId: () => string;
  fetch: FetchLike;
  /** The URL users reach the service at; known only once the server listens when the port is 0. */
  publicUrl: () => string;
  readiness: Readiness;
  requestIds: RequestIds;
  runtime: Runtime;
};

/** How long connect waits for the MCP server's answer to initialize. */
export const HANDSHAKE_TIMEOUT_MS = 15_000;

export function createServices(deps: Deps) {
  const userRepository = createUserRepository(deps.db, deps.clock);
  const connectorRepository = createConnectorRepository(deps.db, deps.clock);
  const presets = createPresetCatalog(deps.config.presets);
  const users = createUserService({ users: userRepository, clock: deps.clock, newId: deps.newId });
  const urlGuard = createUrlGuard({ blockPrivate: deps.config.security.blockPrivateNetworks, clock: deps.clock });
  const upstreamFetch = guardedFetch(deps.fetch, urlGuard);
  const metrics = createRegistry();
  /** Forwarding settings and metrics (`<prefix>_proxy_…`) of one of the two relays, MCP and A2A. */
  const relayOptions = (prefix: string, upstreamName: string, buckets: number[]): ForwardOptions => ({
    fetch: upstreamFetch,
    headersTimeoutMs: deps.config.proxy.upstreamTimeoutMs,
    streams: new Set(),
    upstreamName,
    metrics: {
      requests: metrics.counter(`${prefix}_proxy_requests_total`, `${upstreamName} proxy requests by the status relayed (502/504: upstream failed)`, "status"),
      latency: metrics.histogram(`${prefix}_proxy_upstream_latency_seconds`, `Time from sending a request to the ${upstreamName} to its response headers`, buckets),
      openStreams: metrics.upDown(`${prefix}_proxy_open_streams`, `Event streams from the ${upstreamName} being relayed now`),
    },
  });
  metrics.gauge("connectors", "Connectors by state", "state", () =>
    connectorRepository.countByState().map(({ state, count }) => [state, count]),
  );
  const oauth = createOAuthService({
    repository: createOAuthRepository(deps.db),
    sealer: deps.sealer,
    http: createOAuthHttp(upstreamFetch, deps.config.security.blockPrivateNetworks),
    clock: deps.clock,
    publicUrl: deps.publicUrl,
    processId: deps.newId(),
    log: deps.log.child({ component: "oauth" }),
  });
  const connectors = createConnectorService({
    connectors: connectorRepository,
    presets,
    sealer: deps.sealer,
    clock: deps.clock,
    newId: deps.newId,
    urlGuard,
    onDisconnected: (id) => {
      oauth.forget(id);
      void deps.runtime.remove(id).catch((e) => deps.log.warn("could not remove a deployment", { connector_id: id, error: (e as Error).message }));
    },
  });
  const connections = createConnectionService({
    connectors,
    oauth,
    runtime: deps.runtime,
    open: (sealed, context) => deps.sealer.open(sealed, context),
    clock: deps.clock,
    upstreamFetch,
    handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
    allowedRedirectOrigins: () => [new URL(deps.publicUrl()).origin, ...deps.config.oauth.allowedRedirectOrigins],
    seal: (value, context) => deps.sealer.seal(value, context),
  });
  const proxy = createProxyService({
    connectors,
    connections,
    clock: deps.clock,
    forward: {
      ...relayOptions("mcp", "MCP server", [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]),
      maxBodyBytes: deps.config.proxy.maxBodyBytes,
    },
  });
  const authenticate = createAuthenticator({ users: userRepository, clock: deps.clock });
  const providers = createProviderService({
    providers: createProviderRepository(deps.db),
    fetch: upstreamFetch,
    urlGuard,
    clock: deps.clock,
    newId: deps.newId,
    publicUrl: deps.publicUrl,
    refreshAfterMs: deps.config.a2a.cardRefreshMs,
  });
  const a2aForward = relayOptions("a2a", "agent", [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30]);
  /** What the scheduler runs (issue #4): token refreshes before expiry, and the removal of stale OAuth states. */
  const jobs = [
    { name: "reconcile-deployments", run: () => connections.reconcileDeployments() },
    { name: "expire-oauth-states", run: () => void oauth.expireStates() },
    { name: "refresh-agent-cards", run: () => providers.refreshStale() },
    {
      name: "refresh-oauth-tokens",
      run: async () => {
        for (const id of oauth.dueGrants(20)) await connections.refresh(id);
      },
    },
  ];
  return { users, connectors, connections, presets, proxy, metrics, authenticate, providers, a2aForward, jobs };
}
export type Services = ReturnType<typeof createServices>;

export function buildApp(deps: Deps, services: Services = createServices(deps)) {
  const auth = authPlugin(services.authenticate);
  // normalize: false makes `additionalProperties: false` reject unknown fields (a typo is a 422, not silently dropped).
  return new Elysia({ normalize: false })
    .use(problemPlugin(deps.log, deps.requestIds))
    .use(docsPlugin(VERSION))
    .use(healthRoutes(deps.readiness))
    .use(metricsRoutes(services.metrics))
    .use(userRoutes(services.users, auth))
    .use(presetRoutes(services.presets, auth))
    .use(oauthRoutes(services.connections, deps.publicUrl))
    .use(connectorRoutes(services.connectors, services.connections, auth))
    .use(proxyRoutes(services.proxy, auth))
    .use(providerRoutes(services.providers, auth))
    .use(a2aRoutes(services.providers, services.authenticate, auth, services.a2aForward));
}
export type App = ReturnType<typeof buildApp>;
