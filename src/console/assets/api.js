// The service's API as the console calls it: same origin, the session cookie, the CSRF token on every change.

let csrfToken = null;
let onSignedOut = () => {};

/** The CSRF token of the session (from sign-in or GET /api/v1/session), sent as X-CSRF-Token with every change. */
export function setCsrfToken(token) {
  csrfToken = token;
}

/** The session's CSRF token: the console's MCP requests at a proxy URL carry it too (mcp.js). */
export const currentCsrfToken = () => csrfToken;

/** What to do when the API says the session is over (401): show the sign-in page. */
export function whenSignedOut(callback) {
  onSignedOut = callback;
}

/** An RFC 9457 problem the API answered; `message` is its `detail`, what the person should read. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(describe(problem, status));
    this.status = status;
    this.problem = problem;
  }
}

function describe(problem, status) {
  const detail = (problem && (problem.detail || problem.title)) || `The service answered ${status}.`;
  const fields = Array.isArray(problem && problem.errors) ? problem.errors : [];
  const extra = fields
    .filter((e) => e && e.detail && !detail.includes(e.detail))
    .map((e) => (e.field ? `${e.field}: ${e.detail}` : e.detail));
  return [detail, ...extra].join(" ");
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Sends one request; resolves to the parsed JSON (null for 204) or throws an ApiError. A 401 also tells the
 * console the session is over, unless `quiet401` (signing in, and the first look for a session).
 */
export async function api(method, path, body, { quiet401 = false } = {}) {
  const headers = { accept: "application/json, application/problem+json" };
  // Every change says JSON, body or not (the API wants it: an HTML form of another site cannot send it).
  if (body !== undefined || UNSAFE.has(method)) headers["content-type"] = "application/json";
  if (UNSAFE.has(method) && csrfToken) headers["x-csrf-token"] = csrfToken;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
      redirect: "error",
    });
  } catch {
    throw new ApiError(0, {
      title: "Network error",
      detail: "The service could not be reached. Check the connection and try again.",
    });
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = new ApiError(
      response.status,
      data ?? { detail: `The service answered ${response.status} ${response.statusText}.` },
    );
    if (response.status === 401 && !quiet401) onSignedOut(error);
    throw error;
  }
  return data;
}

/** One page of a list that pages with `next_cursor`. */
export function page(path, cursor) {
  const query = new URLSearchParams({ limit: "100" });
  if (cursor) query.set("cursor", cursor);
  return api("GET", `${path}?${query}`);
}
