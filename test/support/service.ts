import { randomBytes } from "node:crypto";
import { startService, type RunningService } from "../../src/cli/serve";

export const ADMIN = { username: "admin", password: "admin-password-for-tests" };

export type Credentials = { username: string; password: string } | { token: string };

export const authHeader = (c: Credentials) =>
  "token" in c ? `Bearer ${c.token}` : `Basic ${Buffer.from(`${c.username}:${c.password}`).toString("base64")}`;

export type ApiResponse<T = any> = { status: number; headers: Headers; body: T; text: string };

export type Api = (method: string, path: string, options?: { body?: unknown; raw?: string; as?: Credentials | null; headers?: Record<string, string> }) => Promise<ApiResponse>;

/** A client for the service's API: JSON in and out, authenticated as `as` (default the admin). */
export function apiClient(baseUrl: string, defaultAs: Credentials = ADMIN): Api {
  return async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const as = options.as === undefined ? defaultAs : options.as;
    if (as) headers.authorization = authHeader(as);
    let body: string | undefined = options.raw;
    if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers["content-type"] ??= "application/json";
    const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  };
}

export type TestService = RunningService & {
  api: Api;
  logs: string[];
  /** One tick of the scheduler: every job once, in order (the loop itself ticks once an hour unless told). */
  runJobs(): Promise<void>;
};

/**
 * The whole service in this process on 127.0.0.1 with a free port and an in-memory database: for end-to-end
 * tests with real peers over real sockets. `clock` is what the services read (a test steps it instead of waiting).
 */
export async function startTestService(env: Record<string, string> = {}, options: { clock?: () => number } = {}): Promise<TestService> {
  const logs: string[] = [];
  const service = await startService(
    {
      DATABASE__PATH: ":memory:",
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
  return {
    ...service,
    api: apiClient(service.url),
    logs,
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

export function expectProblem(res: ApiResponse, status: number): void {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  const type = res.headers.get("content-type") ?? "";
  if (!type.startsWith("application/problem+json")) throw new Error(`expected problem+json, got ${type}: ${res.text}`);
  for (const field of ["type", "title", "status", "detail"]) {
    if (!(field in (res.body ?? {}))) throw new Error(`problem without ${field}: ${res.text}`);
  }
  if (res.body.status !== status) throw new Error(`problem status ${res.body.status} != ${status}`);
}
