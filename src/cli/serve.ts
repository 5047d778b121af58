import { buildApp, createServices, type Deps } from "../app";
import { ConfigError, describeConfig, loadConfig } from "../config/load";
import { openDatabase } from "../db/open";
import { startServer } from "../http/server";
import { createLogger } from "../observability/logger";
import { loadSealingKey } from "../secrets/key";
import { createSealer } from "../secrets/sealer";
import { VERSION } from "../version";

/** `connector-service serve`: the only code that reads the environment, opens the database and listens. */
export async function serve(env: Record<string, string | undefined>): Promise<number> {
  let config;
  try {
    config = loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`connector-service: configuration error: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const log = createLogger({ level: config.log.level });
  let key;
  try {
    key = loadSealingKey(config.secrets.key, config.secrets.keyFile);
  } catch (e) {
    process.stderr.write(`connector-service: configuration error: SECRETS__KEY: ${(e as Error).message}\n`);
    return 2;
  }
  if (key.origin === "file-created") log.info("created a new sealing key file", { file: config.secrets.keyFile });
  if (key.origin === "ephemeral") log.warn("no SECRETS__KEY and an in-memory database: secrets are sealed with a key that dies with the process");

  const database = openDatabase(config.database.path);
  log.info("database ready", { path: config.database.path, migrations_applied: database.applied });

  let publicUrl = config.server.publicUrl ?? "";
  let stopping = false;
  const requestIds = new WeakMap<Request, string>();
  const deps: Deps = {
    config,
    db: database.db,
    sealer: createSealer(key.key),
    log,
    clock: Date.now,
    newId: () => crypto.randomUUID(),
    fetch: globalThis.fetch,
    publicUrl: () => publicUrl,
    readiness: () => (stopping ? { ready: false, reason: "The service is shutting down" } : { ready: true }),
    requestIds,
  };
  const services = createServices(deps);
  const admin = await services.users.ensureAdmin(config.auth.adminUsername, config.auth.adminPassword);
  if (admin.generated) {
    // Logged once, when the administrator is created; set AUTH__ADMIN_PASSWORD to choose it instead.
    log.warn("created the bootstrap administrator with a generated password; it is not shown again", {
      username: config.auth.adminUsername,
      generated_admin_password: admin.generated,
    });
  }

  const app = buildApp(deps, services);
  const running = startServer(app.fetch, {
    host: config.server.host,
    port: config.server.port,
    maxRequestBodySize: config.proxy.maxBodyBytes,
    log,
    requestIds,
  });
  publicUrl ||= running.url;
  log.info("connector-service listening", {
    version: VERSION,
    url: running.url,
    public_url: publicUrl,
    docs: `${publicUrl}/docs`,
    settings: describeConfig(env, config),
  });

  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info("shutting down", { signal });
      resolve();
    };
    process.once("SIGTERM", () => onSignal("SIGTERM"));
    process.once("SIGINT", () => onSignal("SIGINT"));
  });
  await running.stop(config.server.shutdownTimeoutMs);
  database.close();
  log.info("stopped");
  return 0;
}
