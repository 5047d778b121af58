import { randomBytes } from "node:crypto";
import { startService, type RunningService } from "../../src/cli/serve";
import { apiOver, type Api, type Credentials } from "./api";
import { testDatabaseEnv } from "./store";

export const ADMIN = { username: "admin", password: "admin-password-for-tests" };

/** A client for the service's API over its socket, authenticated as `as` (default the admin). */
export const apiClient = (baseUrl: string, defaultAs: Credentials = ADMIN): Api =>
  apiOver((request) => fetch(request), baseUrl, defaultAs);

/** A user of a test service or app, as both harnesses give one (test/support/app.ts has the same shape). */
export type TestUser = {
  principal: { id: string; username: string; role: "admin" | "user" };
  /** An API token of the user's. */
  token: string;
  basic: { username: string; password: string };
  /** The API, authenticated with the token. */
  api: Api;
};

export type TestService = RunningService & {
  api: Api;
  logs: string[];
  /** The bootstrap administrator: Basic (no token made unless asked through `user`). */
  admin: { basic: typeof ADMIN; api: Api };
  /** A new user (role `user` unless said) with an API token, made through the API as the administrator. */
  user(username: string, role?: "admin" | "user"): Promise<TestUser>;
  /** One tick of the scheduler: every job once, in order (the loop itself ticks once an hour unless told). */
  runJobs(): Promise<void>;
};

/**
 * The whole service in this process on 127.0.0.1 with a free port and a fresh database (SQLite in memory, or PostgreSQL with TEST_STORE=postgres): for end-to-end
 * tests with real peers over real sockets. `clock` is what the services read (a test steps it instead of waiting).
 */
export async function startTestService(
  env: Record<string, string> = {},
  options: { clock?: () => number } = {},
): Promise<TestService> {
  const logs: string[] = [];
  const database = "DATABASE__PATH" in env || "DATABASE__URL" in env ? {} : await testDatabaseEnv();
  const service = await startService(
    {
      ...database,
      SERVER__PORT: "0",
      SECRETS__KEY: randomBytes(32).toString("base64"),
      AUTH__ADMIN_PASSWORD: ADMIN.password,
      LOG__LEVEL: "debug",
      SERVER__SHUTDOWN_TIMEOUT_SECONDS: "2",
      SCHEDULER__INTERVAL_SECONDS: "3600",
      ...env,
    },
    { writeLog: (line) => logs.push(line), ...options },
  );
  const api = apiClient(service.url);
  return {
    ...service,
    api,
    logs,
    admin: { basic: ADMIN, api },
    async user(username, role = "user") {
      const password = `${username}-password`;
      const created = await api("POST", "/api/v1/users", { body: { username, password, role } });
      if (created.status !== 201) throw new Error(`creating ${username}: ${created.status} ${created.text}`);
      const basic = { username, password };
      const made = await apiClient(service.url, basic)("POST", "/api/v1/tokens", { body: { name: "tests" } });
      if (made.status !== 201) throw new Error(`a token for ${username}: ${made.status} ${made.text}`);
      const token = made.body.token as string;
      return { principal: { id: created.body.id, username, role }, token, basic, api: apiClient(service.url, { token }) };
    },
    async runJobs() {
      for (const job of service.services.jobs) await job.run();
    },
  };
}

/** Creates a user with role `user` and returns its credentials. */
export async function createUser(api: Api, username: string): Promise<{ username: string; password: string }> {
  const password = `${username}-password`;
  const res = await api("POST", "/api/v1/users", { body: { username, password, role: "user" } });
  if (res.status !== 201) throw new Error(`creating ${username}: ${res.status} ${res.text}`);
  return { username, password };
}
