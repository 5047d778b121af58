import { buildApp, createServices, type Deps, type Services } from "../app";
import { ConfigError, describeConfig, loadConfig, type Config } from "../config/load";
import { openStore } from "../db/open";
import type { Store } from "../db/store";
import { ServiceUnavailable } from "../http-errors/errors";
import { problemResponse } from "../http-errors/problem";
import { clientAddress } from "../security/client-address";
import type { RequestIds } from "../http/request-id";
import {
  readTlsCertificate,
  startServer,
  TlsFileError,
  type Fetch,
  type RunningServer,
  type TlsCertificate,
} from "../http/server";
import type { ProxyEntry } from "../proxy/entry";
import { proxyNativeRoute } from "../proxy/native-route";
import { createKubernetesRuntime } from "../runtime/kubernetes/driver";
import { createLocalRuntime } from "../runtime/local";
import { createProcessLimits } from "../runtime/process-limits";
import { chooseSandbox, prepareSandbox, SandboxUnavailable, servicePaths, type SandboxChoice } from "../runtime/sandbox";
import { startScheduler, type Scheduler } from "../scheduler/scheduler";
import { createLogger, type Logger } from "../observability/logger";
import { KeyFileError, loadSealingKey } from "../secrets/key";
import { createSealer } from "../secrets/sealer";
import { sessionCookie } from "../users/sessions";
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

/**
 * For tests: where log lines go, the clock the services read (timers and sockets keep real time), and how long a
 * request that arrives during the start waits for it (STARTING_HOLD_MS).
 */
export type StartOptions = { writeLog?: (line: string) => void; clock?: () => number; startingHoldMs?: number };

/** How long a request that arrives while the service starts waits for it, before a 503 with Retry-After. */
export const STARTING_HOLD_MS = 10_000;

/**
 * Reads the environment, listens, opens the database and creates what the service needs. Throws ConfigError for a
 * bad setting. The listener comes up first, so `/healthz` answers while the rest starts; every other request waits
 * for the start (startingGate). Resolves once the service is ready.
 */
export async function startService(env: Record<string, string | undefined>, options: StartOptions = {}): Promise<RunningService> {
  const phases = startupPhases();
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
  // RUNTIME__SANDBOX=bwrap where bwrap cannot run is a setting's error too (its masks are set once the paths exist).
  let sandbox: SandboxChoice | undefined;
  try {
    sandbox = config.runtime.driver === "local" ? chooseSandbox(config.runtime.sandbox) : undefined;
  } catch (e) {
    if (e instanceof SandboxUnavailable) throw new ConfigError("RUNTIME__SANDBOX", e.message);
    throw e;
  }
  phases.mark("config");

  const requestIds = new WeakMap<Request, string>();
  const gate = startingGate(requestIds, options.startingHoldMs ?? STARTING_HOLD_MS);
  // Listen first: a start that cannot listen (the port is taken) fails before it creates anything — a key file, a
  // database, an administrator password shown once that nobody would see.
  let running: RunningServer;
  try {
    running = startServer(gate.fetch, {
      routes: proxyNativeRoute(gate.proxyEntry),
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
  const publicUrl = config.server.publicUrl || running.url;
  phases.mark("listen");

  let store: Store | undefined;
  let stopping = false;
  let scheduler: Scheduler | undefined;
  let deps: Deps;
  let services: Services;
  try {
    // Between the synchronous steps, health checks that arrived meanwhile are answered.
    await nextTurn();
    let key;
    try {
      key = loadSealingKey(config.secrets.key, config.secrets.keyFile);
    } catch (e) {
      if (e instanceof KeyFileError) throw new ConfigError("SECRETS__KEY", `not set, and the ${e.message}`);
      throw e;
    }
    phases.mark("key");
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
    await nextTurn();

    const opened = await openStore(config.database, (error) =>
      log.warn("the checkpoint thread stopped: the database connection checkpoints by itself again", {
        component: "database",
        error,
      }),
    );
    store = opened;
    phases.mark("database");
    log.info("database ready", {
      store: opened.dialect,
      ...(opened.dialect === "sqlite" && { path: config.database.path }),
      migrations_applied: opened.applied,
    });
    await nextTurn();

    deps = {
      config,
      store: opened,
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
          : scheduler === undefined
            ? { ready: false, reason: "The service is starting" }
            : scheduler.running()
              ? { ready: true }
              : { ready: false, reason: "The scheduler is not running" },
      requestIds,
      // Asked only while the request is handled (its socket is still there), and only when a limit needs it: the
      // peer, or the client a trusted proxy names (SERVER__TRUSTED_PROXIES).
      clientAddress: (request) =>
        clientAddress(running.server.requestIP(request)?.address, request.headers, config.server.trustedProxies),
      runtime:
        config.runtime.driver === "kubernetes"
          ? await createKubernetesRuntime({
              namespace: config.kubernetes.namespace,
              gatewayImage: config.kubernetes.gatewayImage,
              access: config.kubernetes.serviceAccess,
              log: log.child({ component: "runtime" }),
            })
          : createLocalRuntime({
              log: log.child({ component: "runtime" }),
              sandbox: prepareSandbox(sandbox!, servicePaths(config), log.child({ component: "runtime" })),
              limits: createProcessLimits(config.runtime),
            }),
    };
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
    const admin = await services.users.ensureAdmin(config.auth.adminUsername, config.auth.adminPassword);
    if (admin.generated) {
      // Logged once, when the administrator is created (after listening); set AUTH__ADMIN_PASSWORD to choose it instead.
      log.warn(
        "created the bootstrap administrator; its generated password is shown this once (set AUTH__ADMIN_PASSWORD to choose one)",
        {
          username: config.auth.adminUsername,
          generated: admin.generated,
        },
      );
    }
    phases.mark("admin");
    gate.open({ fetch: app.fetch, proxy: services.proxyEntry });

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
  if (!sessionCookie(publicUrl).secure) {
    log.warn(
      "the console is served over plain http to a host that is not loopback: its session cookie is neither Secure nor __Host-, so anyone on the network path can read or plant it; serve https (SERVER__TLS_CERT_FILE, or a TLS proxy and an https SERVER__PUBLIC_URL)",
      { public_url: publicUrl },
    );
  }
  log.info("connector-service listening", {
    version: VERSION,
    url: running.url,
    public_url: publicUrl,
    docs: `${publicUrl}/docs`,
    ...(tls && { tls: describeCertificate(tls) }),
    settings: describeConfig(env, config),
  });
  log.debug("start-up phases", phases.done());

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
      await services.audit
        .flush()
        .catch((e) => log.error("audit records could not be written at shutdown", { error: (e as Error).message }));
      await services.tracing
        ?.shutdown()
        .catch((e) => log.warn("the last spans could not be exported", { error: (e as Error).message }));
      await deps.store.close();
      log.info("stopped");
    },
  };
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

type Started = { fetch: Fetch; proxy: ProxyEntry };

/**
 * What the listener serves while the service starts. `GET /healthz` answers 200 at once (the process is up) and
 * `GET /readyz` 503 (not ready) — the app's own routes once it is built (`health`), which its readiness keeps at 503
 * until the start is done. Every other request waits for the service to start — the app built, the administrator
 * created — and then is served as usual. One that waits longer than `holdMs`, or whose start fails, is a 503 problem
 * with Retry-After: never an answer from a service half made.
 */
function startingGate(requestIds: RequestIds, holdMs: number) {
  let started: Started | undefined;
  let app: Fetch | undefined;
  let settle!: (value: Started | undefined) => void;
  const opened = new Promise<Started | undefined>((resolve) => (settle = resolve));
  const notReady = (request: Request, detail: string) => problemResponse(new ServiceUnavailable(detail), requestIds.get(request));
  const notYet = (request: Request) =>
    problemResponse(
      Object.assign(new ServiceUnavailable("The service is starting: try again in a moment"), {
        headers: { "retry-after": "1" },
      }),
      requestIds.get(request),
    );
  /** The started service, or the 503 to answer with. */
  async function wait(request: Request): Promise<Started | Response> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), holdMs)));
    const outcome = await Promise.race([opened, timeout]);
    clearTimeout(timer);
    if (outcome === "timeout") return notYet(request);
    return outcome ?? notReady(request, "The service could not start");
  }
  const proxyEntry: ProxyEntry = {
    handle: async (request, id) => {
      const service = started ?? (await wait(request));
      return service instanceof Response ? service : service.proxy.handle(request, id);
    },
    // A CORS preflight is answered at once (its answer is synchronous): before the start, not yet.
    preflight: (request) => (started ? started.proxy.preflight(request) : notYet(request)),
  };
  return {
    fetch(request: Request): Response | Promise<Response> {
      if (started) return started.fetch(request);
      if (request.method === "GET") {
        const path = new URL(request.url).pathname;
        if (app && (path === "/healthz" || path === "/readyz")) return app(request);
        if (path === "/healthz") return Response.json({ status: "ok" });
        if (path === "/readyz") return notReady(request, "The service is starting");
      }
      return wait(request).then((service) => (service instanceof Response ? service : service.fetch(request)));
    },
    proxyEntry,
    /** The app is built: it answers the health checks from now on (its first requests compile its handlers). */
    health(built: Fetch): void {
      app = built;
    },
    open(service: Started): void {
      started = service;
      settle(service);
    },
    fail(): void {
      settle(undefined);
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
  if (tls.validTo.getTime() <= now)
    log.warn("the TLS certificate has expired: clients will refuse it until it is renewed", describeCertificate(tls));
}

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
