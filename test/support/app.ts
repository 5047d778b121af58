import { randomBytes } from "node:crypto";
import { buildApp, createServices, type Deps, type Services } from "../../src/app";
import { loadConfig, type Config } from "../../src/config/load";
import type { Store } from "../../src/db/store";
import { openTestStore } from "./store";
import { createLogger } from "../../src/observability/logger";
import { createLocalRuntime } from "../../src/runtime/local";
import { createProcessLimits } from "../../src/runtime/process-limits";
import type { Runtime } from "../../src/runtime/runtime";
import { createSealer } from "../../src/secrets/sealer";
import type { Principal } from "../../src/users/model";
import { createUserRepository } from "../../src/users/repository";
import { fakeNetwork, type FakeNetwork } from "./network";
import { apiOver, type Api, type Credentials } from "./api";

/** Where the test app says it lives: its public URL, the OAuth callback's origin. */
export const PUBLIC_URL = "http://cs.test";
/** Every user the harness makes has this password (hashed once per process: argon2id costs ~100 ms). */
export const TEST_PASSWORD = "test-password-of-every-user";
let passwordHash: Promise<string> | undefined;

export type SteppedClock = { now: () => number; advance(ms: number): void };

/** A clock that moves only when the test says so. */
export function steppedClock(start = Date.UTC(2026, 10, 22, 12)): SteppedClock {
  let now = start;
  return { now: () => now, advance: (ms) => void (now += ms) };
}

export type TestAppOptions = {
  /** Settings as environment variables (the same validation as at start-up). */
  env?: Record<string, string>;
  /** Changes to the loaded settings that no variable allows, such as waits shorter than a second. */
  configure?: (config: Config) => void;
  network?: FakeNetwork;
  /**
   * The service reaches real peers (servers on loopback started by the test) with real fetch and DNS instead of the
   * fake network (`network` then sees nothing); requests to the service itself still go through `app.handle` (`fetch`
   * below for SDK clients), with no socket of its own. Its clock is still the stepped one.
   */
  realNetwork?: boolean;
  /** The clock the services read, when the test needs it before the app exists (to give it to a runtime). */
  clock?: SteppedClock;
  runtime?: Runtime;
  publicUrl?: string;
  /** What happens while the services wait (after the clock has moved on): another process's work, say. */
  whileSleeping?: (ms: number) => Promise<void>;
  /** The store to run on (closed by `close`), when the test needs a particular one: a SQLite file, say. */
  store?: Store;
  /** The sealing key (32 bytes), when the test opens the sealed values itself or hands the key to a command. */
  sealingKey?: Uint8Array;
  /** The administrator's user name ("admin"): a second instance on the same store (another replica) needs another. */
  adminUsername?: string;
};

export type TestApp = Awaited<ReturnType<typeof createTestApp>>;

/**
 * The whole service as `buildApp(deps)`, driven through `app.handle`: a fresh database (SQLite in memory, or PostgreSQL with TEST_STORE=postgres) with the real
 * migrations, a stepped clock, and a fake network instead of sockets. Fast (milliseconds a request) and
 * deterministic; the end-to-end tests with real peers use test/support/service.ts instead.
 */
export async function createTestApp(options: TestAppOptions = {}) {
  const clock = options.clock ?? steppedClock();
  const network = options.network ?? fakeNetwork();
  const config = loadConfig({ DATABASE__PATH: ":memory:", SCHEDULER__INTERVAL_SECONDS: "3600", ...options.env });
  options.configure?.(config);
  const store = options.store ?? (await openTestStore());
  const logs: string[] = [];
  const log = createLogger({ level: "debug", write: (line) => logs.push(line), clock: clock.now });
  const publicUrl = options.publicUrl ?? PUBLIC_URL;
  const deps: Deps = {
    config,
    store,
    sealer: createSealer(options.sealingKey ?? randomBytes(32)),
    log,
    clock: clock.now,
    sleep: async (ms) => {
      clock.advance(ms);
      await options.whileSleeping?.(ms);
    },
    newId: () => Bun.randomUUIDv7(),
    ...(options.realNetwork ? { fetch: globalThis.fetch } : { fetch: network.fetch, resolveHost: network.resolve }),
    publicUrl: () => publicUrl,
    readiness: () => ({ ready: true }),
    requestIds: new WeakMap(),
    // A test names its client with this header; everything else comes from one.
    clientAddress: (request) => request.headers.get("x-test-client") ?? "test-client",
    // No sandbox: these tests run no server process that could read anything (test/runtime/sandbox.test.ts does).
    runtime:
      options.runtime ?? createLocalRuntime({ log, sandbox: { kind: "none" }, limits: createProcessLimits(config.runtime) }),
  };
  const services: Services = createServices(deps);
  const app = buildApp(deps, services);
  const handle = (request: Request) => app.handle(request);
  /** A client's fetch: requests to the app's URL go to `app.handle`, any other over the network (to a real peer). */
  const clientFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    return request.url.startsWith(`${publicUrl}/`) ? handle(request) : fetch(request);
  };
  const userRows = createUserRepository(store);

  /** A user (role `user` unless said) with an API token; its `api` authenticates with the token. */
  async function user(username: string, role: Principal["role"] = "user") {
    passwordHash ??= Bun.password.hash(TEST_PASSWORD, "argon2id");
    const now = clock.now();
    const id = deps.newId();
    await userRows.insert({
      id,
      username,
      password_hash: await passwordHash,
      role,
      disabled_at: null,
      requests_per_minute: null,
      created_at: now,
      updated_at: now,
    });
    const principal: Principal = { id, username, role };
    const { token } = await services.users.createToken(principal, { name: "tests" });
    return { principal, token, basic: { username, password: TEST_PASSWORD }, api: apiOf({ token }) };
  }

  /** The API through `app.handle`, authenticated as `as` (null: no credentials). */
  const apiOf = (as: Credentials | null): Api => apiOver(handle, publicUrl, as);

  const admin = await user(options.adminUsername ?? "admin", "admin");
  return {
    app,
    deps,
    services,
    config,
    clock,
    network,
    logs,
    handle,
    fetch: clientFetch,
    publicUrl,
    admin,
    /** The API as the administrator. */
    api: admin.api,
    apiOf,
    user,
    /** One tick of the scheduler: every job once, in order (the loop itself is not running). */
    async runJobs(): Promise<void> {
      for (const job of services.jobs) await job.run();
    },
    async close(): Promise<void> {
      await store.close();
    },
  };
}
