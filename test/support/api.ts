/** The service's API as tests call it, over a socket or through `app.handle`: JSON in and out, problems checked. */

export type Credentials = { username: string; password: string } | { token: string };

export const authHeader = (c: Credentials) =>
  "token" in c ? `Bearer ${c.token}` : `Basic ${Buffer.from(`${c.username}:${c.password}`).toString("base64")}`;

export type ApiResponse<T = any> = { status: number; headers: Headers; body: T; text: string };

export type Api = (
  method: string,
  path: string,
  options?: { body?: unknown; raw?: string; as?: Credentials | null; headers?: Record<string, string> },
) => Promise<ApiResponse>;

/** An API client that sends its requests with `send` (fetch, or an app's handle), authenticated as `defaultAs`. */
export function apiOver(send: (request: Request) => Promise<Response>, baseUrl: string, defaultAs: Credentials | null): Api {
  return async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const as = options.as === undefined ? defaultAs : options.as;
    if (as) headers.authorization = authHeader(as);
    let body: string | undefined = options.raw;
    if (options.body !== undefined) body = JSON.stringify(options.body);
    // Changes carry the JSON content type, body or not, as the API wants (src/http/cross-site.ts).
    if (body !== undefined || ["POST", "PUT", "PATCH"].includes(method)) headers["content-type"] ??= "application/json";
    return readResponse(await send(new Request(`${baseUrl}${path}`, { method, headers, body })));
  };
}

export async function readResponse(response: Response): Promise<ApiResponse> {
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

/** An RFC 9457 problem document with this status (the message shows the body when it is not). */
export function expectProblem(res: ApiResponse, status: number): void {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  const type = res.headers.get("content-type") ?? "";
  if (!type.startsWith("application/problem+json")) throw new Error(`expected problem+json, got ${type}: ${res.text}`);
  for (const field of ["type", "title", "status", "detail"]) {
    if (!(field in (res.body ?? {}))) throw new Error(`problem without ${field}: ${res.text}`);
  }
  if (res.body.status !== status) throw new Error(`problem status ${res.body.status} != ${status}`);
}
