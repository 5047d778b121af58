import { buildApp, createServices, type Deps, type Services } from "../app";
import { ConfigError, describeConfig, loadConfig, type Config } from "../config/load";
import { openStore } from "../db/open";
import type { Store } from "../db/store";
import type { Readiness } from "../health/routes";
import { clientAddress } from "../security/client-address";
import type { RequestIds } from "../http/request-id";
import { startServer, type RunningServer } from "../http/server";
import { startingGate, STARTING_HOLD_MS } from "../http/starting-gate";
import {
  describeCertificate,
  readTlsCertificate,
  reloadCertificate,
  tlsSetting,
  TlsFileError,
  warnIfExpired,
  type TlsCertificate,
} from "../http/tls";
import { nativeRoutes } from "../http/native-routes";
import { createKubernetesRuntime } from "../runtime/kubernetes/driver";
import { createLocalRuntime } from "../runtime/local";
import { createProcessLimits } from "../runtime/process-limits";
import type { Runtime } from "../runtime/runtime";
import { chooseSandbox, prepareSandbox, SandboxUnavailable, servicePaths, type SandboxChoice } from "../runtime/sandbox";
import { startScheduler, type Scheduler } from "../scheduler/scheduler";
import { bufferedStdout, createLogger, type Logger } from "../observability/logger";
import { KeyFileError, loadSealingKey, type KeySource } from "../secrets/key";
import { createSealer } from "../secrets/sealer";
import { sessionCookie } from "../users/sessions";
import { VERSION } from "../version";
import { formatBanner } from "./banner";

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

/**
 * For tests: where log lines go, the clock the services read (timers and sockets keep real time), and how long a
 * request that arrives during the start waits for it (STARTING_HOLD_MS).
 */
export type StartOptions = {
  writeLog?: (line: string) => void;
  clock?: () => number;
  startingHoldMs?: number;
  /**
   * A person reads the output (`serve` at a terminal): a plain banner once started (banner.ts), written in order with
   * the log lines, and the generated administrator password only there, not in a log line as well.
   */
  banner?: boolean;
};

/**
 * Reads the environment, listens, opens the database and creates what the service needs. Throws ConfigError for a
 * bad setting. The listener comes up first, so `/healthz` answers while the rest starts; every other request waits
 * for the start (http/starting-gate.ts). Resolves once the service is ready.
 */
export async function startService(env: Record<string, string | undefined>, options: StartOptions = {}): Promise<RunningService> {
  const phases = startupPhases();
  const config = loadConfig(env);
  const write = options.writeLog ?? bufferedStdout();
  const log = createLogger({ level: config.log.level, write });
  const clock = options.clock ?? Date.now;
  // Before anything is created (a key file, a database): a bad certificate file or sandbox is a setting's error.
  const tls = readCertificateSetting(config, clock, log);
  const sandbox = chooseSandboxSetting(config);
  phases.mark("config");

  const requestIds = new WeakMap<Request, string>();
  const gate = startingGate(requestIds, options.startingHoldMs ?? STARTING_HOLD_MS);
  // Listen first: a start that cannot listen (the port is taken) fails before it creates anything — a key file, a
  // database, an administrator password shown once that nobody would see.
  const running = listen(config, gate, tls, log, requestIds);
  const publicUrl = config.server.publicUrl || running.url;
  phases.mark("listen");

  let scheduler: Scheduler | undefined;
  const readiness = readinessOf(running, () => scheduler);
  let store: Store | undefined;
  let key: KeySource;
  let admin: { generated?: string };
  let deps: Deps;
  let services: Services;
  try {
    // Between the synchronous steps, health checks that arrived meanwhile are answered.
    await nextTurn();
    key = loadKey(config, log);
    phases.mark("key");
    await nextTurn();
    store = await openDatabase(config, log);
    phases.mark("database");
    await nextTurn();
    deps = await processDeps({ config, store, key, sandbox, log, clock, publicUrl, readiness, requestIds, running });
    services = createServices(deps);
    phases.mark("services");
    await nextTurn();
    const app = buildApp(deps, services);
    gate.health(app.fetch);
    phases.mark("app");
    await nextTurn();
    // The administrator exists before any request but a health check is let through: one sent with its credentials
    // meanwhile waits, rather than being refused (401) while the password is hashed, or let in with the password a
    // changed AUTH__ADMIN_PASSWORD replaces.
    admin = await ensureAdmin(services, config, log, options.banner === true);
    phases.mark("admin");
    gate.open({ fetch: app.fetch, native: { proxy: services.proxyEntry, virtual: services.virtualEntry } });
    // At start-up, bring back the managed servers of connected connectors before the first tick (requests are served
    // meanwhile; /readyz says ready once the scheduler runs).
    await services.deployments.reconcile();
    phases.mark("reconcile");
  } catch (e) {
    gate.fail();
    await running.stop(1_000);
    await store?.close();
    throw e;
  }
  scheduler = startScheduler(services.jobs, log, config.scheduler.intervalMs);
  warnIfConsoleExposed(publicUrl, log);
  log.info("connector-service listening", {
    version: VERSION,
    url: running.url,
    public_url: publicUrl,
    docs: `${publicUrl}/docs`,
    ...(tls && { tls: describeCertificate(tls) }),
    settings: describeConfig(env, config),
  });
  log.debug("start-up phases", phases.done());
  if (options.banner)
    write(
      formatBanner({
        publicUrl,
        admin: {
          username: config.auth.adminUsername,
          generated: admin.generated,
          fromSetting: config.auth.adminPassword !== undefined,
        },
        database: store.dialect === "postgres" ? undefined : config.database.path,
        key: { origin: key.origin, file: config.secrets.keyFile },
      }),
    );
  return {
    url: running.url,
    config,
    deps,
    services,
    log,
    reloadTls: () => reloadCertificate(running, config.server.tls, { log, clock }),
    stop: () => stopService({ running, scheduler, deps, services }),
  };
}

/** SERVER__TLS_CERT_FILE and SERVER__TLS_KEY_FILE, read: a file that cannot be served is a setting's error. */
function readCertificateSetting(config: Config, clock: () => number, log: Logger): TlsCertificate | undefined {
  if (!config.server.tls) return undefined;
  try {
    const tls = readTlsCertificate(config.server.tls);
    warnIfExpired(tls, clock(), log);
    return tls;
  } catch (e) {
    if (e instanceof TlsFileError) throw new ConfigError(tlsSetting(e), e.message);
    throw e;
  }
}

/** RUNTIME__SANDBOX=bwrap where bwrap cannot run is a setting's error (its masks are set once the paths exist). */
function chooseSandboxSetting(config: Config): SandboxChoice | undefined {
  try {
    return config.runtime.driver === "local" ? chooseSandbox(config.runtime.sandbox) : undefined;
  } catch (e) {
    if (e instanceof SandboxUnavailable) throw new ConfigError("RUNTIME__SANDBOX", e.message);
    throw e;
  }
}

/** The listener, with the starting gate in front of the app until it is built; a failed listen says what to do. */
function listen(
  config: Config,
  gate: ReturnType<typeof startingGate>,
  tls: TlsCertificate | undefined,
  log: Logger,
  requestIds: RequestIds,
): RunningServer {
  try {
    return startServer(gate.fetch, {
      routes: nativeRoutes(gate.native, requestIds),
      host: config.server.host,
      port: config.server.port,
      tls,
      // A backstop only: the API (API__MAX_BODY_BYTES) and the relays (PROXY__MAX_BODY_BYTES) refuse larger bodies
      // themselves, with a problem document; Bun's own 413 has no body.
      maxRequestBodySize: 4 * Math.max(config.api.maxBodyBytes, config.proxy.maxBodyBytes),
      log,
      requestIds,
    });
  } catch (e) {
    throw listenFailure(e, config);
  }
}

/** The sealing key (SECRETS__KEY, or its file), and what the log must say about where it came from. */
function loadKey(config: Config, log: Logger): KeySource {
  let key: KeySource;
  try {
    key = loadSealingKey(config.secrets.key, config.secrets.keyFile);
  } catch (e) {
    if (e instanceof KeyFileError) throw new ConfigError("SECRETS__KEY", `not set, and the ${e.message}`);
    throw e;
  }
  if (key.origin === "file-created") log.info("created a new sealing key file", { file: config.secrets.keyFile });
  if (key.previous.length) {
    log.warn(
      "a key rotation was interrupted: values sealed under either key open; run connector-service rotate-key again to finish it",
      { file: config.secrets.keyFile },
    );
  }
  if (key.origin === "ephemeral") {
    log.warn("no SECRETS__KEY and an in-memory database: secrets are sealed with a key that dies with the process");
  }
  return key;
}

async function openDatabase(config: Config, log: Logger): Promise<Store> {
  const store = await openStore(config.database, (error) =>
    log.warn("the checkpoint thread stopped: the database connection checkpoints by itself again", {
      component: "database",
      error,
    }),
  );
  log.info("database ready", {
    store: store.dialect,
    ...(store.dialect === "sqlite" && { path: config.database.path }),
    migrations_applied: store.applied,
  });
  return store;
}

/** RUNTIME__DRIVER: where managed stdio servers run. */
function createRuntime(config: Config, sandbox: SandboxChoice | undefined, log: Logger): Promise<Runtime> | Runtime {
  const runtimeLog = log.child({ component: "runtime" });
  return config.runtime.driver === "kubernetes"
    ? createKubernetesRuntime({
        namespace: config.kubernetes.namespace,
        gatewayImage: config.kubernetes.gatewayImage,
        access: config.kubernetes.serviceAccess,
        inputTimeoutMs: config.proxy.inputTimeoutMs,
        log: runtimeLog,
      })
    : createLocalRuntime({
        log: runtimeLog,
        sandbox: prepareSandbox(sandbox!, servicePaths(config), runtimeLog),
        limits: createProcessLimits(config.runtime),
        inputTimeoutMs: config.proxy.inputTimeoutMs,
      });
}

/** /readyz: ready once the scheduler runs, until the service stops. */
function readinessOf(running: RunningServer, scheduler: () => Scheduler | undefined): Readiness {
  return () => {
    if (running.stopping) return { ready: false, reason: "The service is shutting down" };
    const started = scheduler();
    if (started === undefined) return { ready: false, reason: "The service is starting" };
    return started.running() ? { ready: true } : { ready: false, reason: "The scheduler is not running" };
  };
}

/** What the services take from this process: its store, key, runtime, clock, ids, network and listener. */
async function processDeps(from: {
  config: Config;
  store: Store;
  key: KeySource;
  sandbox: SandboxChoice | undefined;
  log: Logger;
  clock: () => number;
  publicUrl: string;
  readiness: Readiness;
  requestIds: RequestIds;
  running: RunningServer;
}): Promise<Deps> {
  const { config, running } = from;
  const runtime = await createRuntime(config, from.sandbox, from.log);
  return {
    config,
    store: from.store,
    sealer: createSealer(from.key.key, from.key.previous),
    log: from.log,
    clock: from.clock,
    sleep: Bun.sleep,
    // UUIDv7 ([RFC 9562 §5.7](https://www.rfc-editor.org/rfc/rfc9562#section-5.7)): time-ordered and monotonic, so "newest first" has no ties to break at random.
    newId: () => Bun.randomUUIDv7(),
    fetch: globalThis.fetch,
    publicUrl: () => from.publicUrl,
    readiness: from.readiness,
    requestIds: from.requestIds,
    // Asked only while the request is handled (its socket is still there), and only when a limit needs it: the
    // peer, or the client a trusted proxy names (SERVER__TRUSTED_PROXIES).
    clientAddress: (request: Request) =>
      clientAddress(running.server.requestIP(request)?.address, request.headers, config.server.trustedProxies),
    runtime,
  };
}

/**
 * The bootstrap administrator (AUTH__ADMIN_USERNAME, AUTH__ADMIN_PASSWORD). A generated password is shown once, when
 * the administrator is created (after listening): in this log line, or in the banner when a person reads the output.
 */
async function ensureAdmin(services: Services, config: Config, log: Logger, banner: boolean): Promise<{ generated?: string }> {
  const admin = await services.users.ensureAdmin(config.auth.adminUsername, config.auth.adminPassword);
  if (admin.generated) {
    log.warn(
      `created the bootstrap administrator; its generated password is shown this once${banner ? " in the banner below" : ""} (set AUTH__ADMIN_PASSWORD to choose one)`,
      { username: config.auth.adminUsername, ...(!banner && { generated: admin.generated }) },
    );
  }
  return admin;
}

/** A console whose session cookie anyone on the network path can read is said at every start. */
function warnIfConsoleExposed(publicUrl: string, log: Logger): void {
  if (!sessionCookie(publicUrl).secure) {
    log.warn(
      "the console is served over plain http to a host that is not loopback: its session cookie is neither Secure nor __Host-, so anyone on the network path can read or plant it; serve https (SERVER__TLS_CERT_FILE, or a TLS proxy and an https SERVER__PUBLIC_URL)",
      { public_url: publicUrl },
    );
  }
}

/** Stops accepting, lets in-flight requests finish (SERVER__SHUTDOWN_TIMEOUT_SECONDS), then writes what is queued and closes the store. */
async function stopService({
  running,
  scheduler,
  deps,
  services,
}: {
  running: RunningServer;
  scheduler: Scheduler;
  deps: Deps;
  services: Services;
}): Promise<void> {
  const { config, log } = deps;
  const stopped = running.stop(config.server.shutdownTimeoutMs);
  await scheduler.stop();
  await deps.runtime.close();
  await services.proxy.closeBridges().catch(() => undefined);
  await services.virtualBridges.closeAll().catch(() => undefined);
  const closed = services.proxy.closeNotificationStreams();
  if (closed) log.info("ended notification streams for shutdown", { streams: closed });
  await stopped;
  // What the requests just finished left in the audit queue is written before the store closes.
  await services.audit
    .flush()
    .catch((e) => log.error("audit records could not be written at shutdown", { error: (e as Error).message }));
  await services.tracing
    ?.shutdown()
    .catch((e) => log.warn("the last spans could not be exported", { error: (e as Error).message }));
  await deps.store.close();
  log.info("stopped");
}

/**
 * Where a start spends its time, for bench/startup.ts (a debug line): ms per phase, and `image` = from this process
 * image's start (the runtime booted, the module graph loaded) to startService.
 */
function startupPhases() {
  const phases: Record<string, number> = { image: performance.now() };
  let last = phases.image!;
  return {
    mark(name: string) {
      const now = performance.now();
      phases[name] = now - last;
      last = now;
    },
    done: () => ({ phases_ms: phases, image_started_at: performance.timeOrigin }),
  };
}

/** Lets the event loop turn once: requests that arrived during a synchronous step are answered before the next. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The service could not start for a reason outside its settings' syntax (the port is taken, the disk refuses). */
export class StartFailed extends Error {}

/** What a failed listen means, in one line that says what to do. */
function listenFailure(e: unknown, config: Config): StartFailed {
  const where = `${config.server.host}:${config.server.port}`;
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE")
    return new StartFailed(`${where} is already in use: stop what listens there, or set SERVER__PORT to another port`);
  if (code === "EACCES")
    return new StartFailed(`not allowed to listen on ${where}: choose a SERVER__PORT above 1023, or grant the permission`);
  if (code === "EADDRNOTAVAIL")
    return new StartFailed(`${config.server.host} is not an address of this machine: set SERVER__HOST to one that is`);
  return new StartFailed(`cannot listen on ${where}: ${(e as Error).message}`);
}

/** `connector-service serve`: runs until SIGTERM or SIGINT. A failed start is one line on stderr, never a trace. */
export async function serve(env: Record<string, string | undefined>): Promise<number> {
  let service: RunningService;
  try {
    // A person at a terminal gets the banner; a program (systemd, a container's log) gets JSON lines only.
    service = await startService(env, { banner: process.stdout.isTTY === true });
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
