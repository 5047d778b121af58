import { buildApp, createServices, type Deps, type Services } from "../app";
import { ConfigError, describeConfig, loadConfig, type Config } from "../config/load";
import { openStore } from "../db/open";
import { readTlsCertificate, startServer, TlsFileError, type RunningServer, type TlsCertificate } from "../http/server";
import { proxyNativeRoute } from "../proxy/native-route";
import { createKubernetesRuntime } from "../runtime/kubernetes/driver";
import { createLocalRuntime } from "../runtime/local";
import { startScheduler, type Scheduler } from "../scheduler/scheduler";
import { createLogger, type Logger } from "../observability/logger";
import { KeyFileError, loadSealingKey } from "../secrets/key";
import { createSealer } from "../secrets/sealer";
import { VERSION } from "../version";

export type RunningService = {
  url: string;
  config: Config;
  deps: Deps;
  services: Services;
  log: Logger;
  /**
   * Reads SERVER__TLS_CERT_FILE and SERVER__TLS_KEY_FILE again and serves new connections with them; open ones keep
   * going. What SIGHUP does. False (and the previous certificate still served, the reason logged) when it could not.
   */
  reloadTls(): boolean;
  /** Graceful: stop accepting, finish in-flight requests (up to the shutdown timeout), close the database. */
  stop(): Promise<void>;
};

/** For tests: where log lines go, and the clock the services read (timers and sockets keep real time). */
export type StartOptions = { writeLog?: (line: string) => void; clock?: () => number };

/** Reads the environment, opens the database and listens. Throws ConfigError for a bad setting. */
export async function startService(env: Record<string, string | undefined>, options: StartOptions = {}): Promise<RunningService> {
  const config = loadConfig(env);
  const log = createLogger({ level: config.log.level, ...(options.writeLog && { write: options.writeLog }) });
  const clock = options.clock ?? Date.now;
  // Before anything is created (a key file, a database): a bad certificate file is a setting's error.
  let tls: TlsCertificate | undefined;
  if (config.server.tls) {
    try {
      tls = readTlsCertificate(config.server.tls);
    } catch (e) {
      if (e instanceof TlsFileError) throw new ConfigError(tlsSetting(e), e.message);
      throw e;
    }
    warnIfExpired(tls, clock(), log);
  }
  let key;
  try {
    key = loadSealingKey(config.secrets.key, config.secrets.keyFile);
  } catch (e) {
    if (e instanceof KeyFileError) throw new ConfigError("SECRETS__KEY", `not set, and the ${e.message}`);
    throw e;
  }
  if (key.origin === "file-created") log.info("created a new sealing key file", { file: config.secrets.keyFile });
  if (key.previous.length) {
    log.warn("a key rotation was interrupted: values sealed under either key open; run connector-service rotate-key again to finish it", { file: config.secrets.keyFile });
  }
  if (key.origin === "ephemeral") {
    log.warn("no SECRETS__KEY and an in-memory database: secrets are sealed with a key that dies with the process");
  }

  const store = await openStore(config.database);
  log.info("database ready", { store: store.dialect, ...(store.dialect === "sqlite" && { path: config.database.path }), migrations_applied: store.applied });

  let publicUrl = config.server.publicUrl ?? "";
  let stopping = false;
  let scheduler: Scheduler | undefined;
  const requestIds = new WeakMap<Request, string>();
  const clientAddresses = new WeakMap<Request, string>();
  const deps: Deps = {
    config,
    store,
    sealer: createSealer(key.key, key.previous),
    log,
    clock,
    sleep: Bun.sleep,
    // UUIDv7 ([RFC 9562 §5.7](https://www.rfc-editor.org/rfc/rfc9562#section-5.7)): time-ordered and monotonic, so "newest first" has no ties to break at random.
    newId: () => Bun.randomUUIDv7(),
    fetch: globalThis.fetch,
    publicUrl: () => publicUrl,
    readiness: () =>
      stopping
        ? { ready: false, reason: "The service is shutting down" }
        : scheduler?.running()
          ? { ready: true }
          : { ready: false, reason: "The scheduler is not running" },
    requestIds,
    clientAddress: (request) => clientAddresses.get(request),
    runtime:
      config.runtime.driver === "kubernetes"
        ? await createKubernetesRuntime({
            namespace: config.kubernetes.namespace,
            gatewayImage: config.kubernetes.gatewayImage,
            access: config.kubernetes.serviceAccess,
            log: log.child({ component: "runtime" }),
          })
        : createLocalRuntime({ log: log.child({ component: "runtime" }) }),
  };
  const services = createServices(deps);
  // Listen before anything is generated: a start that fails (the port is taken) must not have created, and
  // shown once, an administrator password that nobody will see again.
  let running: RunningServer;
  try {
    running = startServer(buildApp(deps, services).fetch, {
      routes: proxyNativeRoute(services.proxyEntry),
      host: config.server.host,
      port: config.server.port,
      tls,
      // A backstop only: the API (API__MAX_BODY_BYTES) and the relays (PROXY__MAX_BODY_BYTES) refuse larger bodies
      // themselves, with a problem document; Bun's own 413 has no body.
      maxRequestBodySize: 4 * Math.max(config.api.maxBodyBytes, config.proxy.maxBodyBytes),
      log,
      requestIds,
      clientAddresses,
    });
  } catch (e) {
    await store.close();
    throw listenFailure(e, config);
  }
  const admin = await services.users.ensureAdmin(config.auth.adminUsername, config.auth.adminPassword);
  if (admin.generated) {
    // Logged once, when the administrator is created; set AUTH__ADMIN_PASSWORD to choose it instead.
    log.warn("created the bootstrap administrator; its generated password is shown this once (set AUTH__ADMIN_PASSWORD to choose one)", {
      username: config.auth.adminUsername,
      generated: admin.generated,
    });
  }
  publicUrl ||= running.url;
  // At start-up, bring back the managed servers of connected connectors before the first tick.
  await services.deployments.reconcile();
  scheduler = startScheduler(services.jobs, log, config.scheduler.intervalMs);
  log.info("connector-service listening", {
    version: VERSION,
    url: running.url,
    public_url: publicUrl,
    docs: `${publicUrl}/docs`,
    ...(tls && { tls: describeCertificate(tls) }),
    settings: describeConfig(env, config),
  });

  return {
    url: running.url,
    config,
    deps,
    services,
    log,
    reloadTls() {
      if (!config.server.tls) {
        log.warn("no TLS certificate to reload: SERVER__TLS_CERT_FILE and SERVER__TLS_KEY_FILE are not set");
        return false;
      }
      if (stopping) return false;
      let next: TlsCertificate;
      try {
        next = readTlsCertificate(config.server.tls);
        running.replaceCertificate(next);
      } catch (e) {
        log.error("TLS certificate not reloaded: still serving the previous one", {
          ...(e instanceof TlsFileError && { setting: tlsSetting(e) }),
          reason: (e as Error).message,
        });
        return false;
      }
      log.info("TLS certificate reloaded: new connections get it, open ones keep theirs", describeCertificate(next));
      warnIfExpired(next, clock(), log);
      return true;
    },
    async stop() {
      stopping = true;
      const stopped = running.stop(config.server.shutdownTimeoutMs);
      await scheduler?.stop();
      await deps.runtime.close();
      const closed = services.proxy.closeNotificationStreams();
      if (closed) log.info("ended notification streams for shutdown", { streams: closed });
      await stopped;
      // What the requests just finished left in the audit queue is written before the store closes.
      await services.audit.flush().catch((e) => log.error("audit records could not be written at shutdown", { error: (e as Error).message }));
      await services.tracing?.shutdown().catch((e) => log.warn("the last spans could not be exported", { error: (e as Error).message }));
      await store.close();
      log.info("stopped");
    },
  };
}

const tlsSetting = (e: TlsFileError) => (e.file === "certificate" ? "SERVER__TLS_CERT_FILE" : "SERVER__TLS_KEY_FILE");

/** What the log says about a certificate: whose it is and until when, never the key. */
const describeCertificate = (tls: TlsCertificate) => ({
  subject: tls.subject.replaceAll("\n", ", "),
  fingerprint_sha256: tls.fingerprint256,
  valid_until: tls.validTo.toISOString(),
});

function warnIfExpired(tls: TlsCertificate, now: number, log: Logger): void {
  if (tls.validTo.getTime() <= now) log.warn("the TLS certificate has expired: clients will refuse it until it is renewed", describeCertificate(tls));
}

/** The service could not start for a reason outside its settings' syntax (the port is taken, the disk refuses). */
export class StartFailed extends Error {}

/** What a failed listen means, in one line that says what to do. */
function listenFailure(e: unknown, config: Config): StartFailed {
  const where = `${config.server.host}:${config.server.port}`;
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") return new StartFailed(`${where} is already in use: stop what listens there, or set SERVER__PORT to another port`);
  if (code === "EACCES") return new StartFailed(`not allowed to listen on ${where}: choose a SERVER__PORT above 1023, or grant the permission`);
  if (code === "EADDRNOTAVAIL") return new StartFailed(`${config.server.host} is not an address of this machine: set SERVER__HOST to one that is`);
  return new StartFailed(`cannot listen on ${where}: ${(e as Error).message}`);
}

/** `connector-service serve`: runs until SIGTERM or SIGINT. A failed start is one line on stderr, never a trace. */
export async function serve(env: Record<string, string | undefined>): Promise<number> {
  let service: RunningService;
  try {
    service = await startService(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`connector-service: configuration error: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(`connector-service: could not start: ${e instanceof StartFailed ? e.message : (e as Error).message}\n`);
    return 1;
  }
  // SIGHUP (`systemctl reload`): a renewed certificate, without a restart. Without TLS it is logged and ignored
  // rather than left to its default action, which would end the process.
  const hangup = () => {
    service.log.info("SIGHUP: reloading the TLS certificate");
    service.reloadTls();
  };
  process.on("SIGHUP", hangup);
  const signal = await new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  process.off("SIGHUP", hangup);
  service.log.info("shutting down", { signal });
  await service.stop();
  return 0;
}
