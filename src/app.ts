import { Elysia } from "elysia";
import type { Config } from "./config/load";
import { createConnectorRepository } from "./connectors/repository";
import { connectorRoutes } from "./connectors/routes";
import { createConnectorService } from "./connectors/service";
import type { Db } from "./db/open";
import { docsPlugin } from "./docs/plugin";
import { healthRoutes, type Readiness } from "./health/routes";
import { problemPlugin } from "./http-errors/plugin";
import { jsonBodyPlugin } from "./http/json-body";
import type { RequestIds } from "./http/server";
import type { Logger } from "./observability/logger";
import { createPresetCatalog } from "./presets/catalog";
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
};

export function createServices(deps: Deps) {
  const userRepository = createUserRepository(deps.db);
  const presets = createPresetCatalog(deps.config.presets);
  const users = createUserService({ users: userRepository, clock: deps.clock, newId: deps.newId });
  const connectors = createConnectorService({
    connectors: createConnectorRepository(deps.db),
    presets,
    sealer: deps.sealer,
    clock: deps.clock,
    newId: deps.newId,
    allowedRedirectOrigins: () => [new URL(deps.publicUrl()).origin, ...deps.config.oauth.allowedRedirectOrigins],
  });
  const authenticate = createAuthenticator({ users: userRepository, clock: deps.clock });
  return { users, connectors, presets, authenticate };
}
export type Services = ReturnType<typeof createServices>;

export function buildApp(deps: Deps, services: Services = createServices(deps)) {
  const auth = authPlugin(services.authenticate);
  // normalize: false makes `additionalProperties: false` reject unknown fields (a typo is a 422, not silently dropped).
  return new Elysia({ normalize: false })
    .use(problemPlugin(deps.log, deps.requestIds))
    .use(jsonBodyPlugin())
    .use(docsPlugin(VERSION))
    .use(healthRoutes(deps.readiness))
    .use(userRoutes(services.users, auth))
    .use(presetRoutes(services.presets, auth))
    .use(connectorRoutes(services.connectors, auth));
}
export type App = ReturnType<typeof buildApp>;
