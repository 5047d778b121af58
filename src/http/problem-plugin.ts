import { Elysia, ValidationError } from "elysia";
import { AppError, BadRequest, NotFound, invalidFields, type FieldError } from "../http-errors/errors";
import { errorResponse } from "../http-errors/problem";
import type { Logger } from "../observability/logger";
import { fromBrowser } from "./cross-site";
import type { RequestIds } from "./request-id";

/**
 * Elysia's own errors (validation, parse, no route) as our AppErrors, then the one renderer (http-errors/problem.ts)
 * for them and for whatever a route threw.
 */
export function problemPlugin(log: Logger, requestIds: RequestIds) {
  return new Elysia({ name: "problem" }).onError({ as: "global" }, ({ code, error, request }) => {
    const response = errorResponse(asAppError(code, error, request), log, requestIds.get(request));
    // A browser (a page's fetch, or a navigation) gets a challenge it does not prompt for, so it never asks for and
    // caches a Basic credential (cross-site.ts; [RFC 7235 §4.1](https://www.rfc-editor.org/rfc/rfc7235#section-4.1) wants a challenge, not which).
    if (response.status === 401 && fromBrowser(request))
      response.headers.set("www-authenticate", 'Bearer realm="connector-service"');
    return response;
  });
}

function asAppError(code: string | number, error: unknown, request: Request): unknown {
  if (code === "PARSE") {
    // Elysia wraps what a body parser throws in its ParseError; ours says what is wrong.
    const cause = (error as Error).cause;
    return cause instanceof AppError ? cause : new BadRequest("The request body could not be parsed");
  }
  if (code === "VALIDATION" && error instanceof ValidationError) {
    return invalidFields(validationErrors(error));
  }
  if (code === "NOT_FOUND") {
    // [RFC 9110 §9.3.6](https://www.rfc-editor.org/rfc/rfc9110#section-9.3.6): CONNECT asks for a tunnel; its target is an authority, not a path.
    if (request.method === "CONNECT") return new NotFound("CONNECT is not served: this service is not a forward proxy");
    return new NotFound(`No route for ${request.method} ${new URL(request.url).pathname}`);
  }
  return error;
}

/** What TypeBox says of one value (its ValueError): a union's also says what each variant found wrong. */
type ValueIssue = { path?: unknown; message?: unknown; schema?: unknown; errors?: Iterable<ValueIssue>[] };

/**
 * A union's error as the errors of the variant the value was meant for: "tool_policy.rename.x: must match …" rather
 * than "tool_policy: Expected union value". That variant is the one whose errors lie deeper than the union (it took
 * the value's shape; `null` or another type fails at the union's own path); when none does, the union's own stays.
 */
function specific(e: ValueIssue): ValueIssue[] {
  const path = typeof e.path === "string" ? e.path : "";
  const variants = (e.errors ?? []).map((variant) => [...variant]).filter((issues) => issues.length > 0);
  const deeper = variants.filter((issues) => issues.every((i) => typeof i.path === "string" && i.path.startsWith(`${path}/`)));
  if (deeper.length > 0) return deeper[0]!.flatMap(specific);
  // Failing at the union's own path, the variant of the value's type says what is wrong with it: Elysia's integer is
  // a string or an integer, and 0 is "Expected integer to be greater or equal to 1", not "Expected string".
  const wrongType = (issues: ValueIssue[]) => issues.every((i) => typeof i.message === "string" && WRONG_TYPE.test(i.message));
  const typed = variants.filter((issues) => !wrongType(issues));
  if (typed.length === 1) return typed[0]!.flatMap(specific);
  // Of no variant's type at all: every type it may be, named ("Expected string or integer").
  if (typed.length === 0 && variants.length > 0)
    return [
      {
        ...e,
        message: `Expected ${variants.map((issues) => String(issues[0]!.message).replace(/^Expected /, "")).join(" or ")}`,
      },
    ];
  return [e];
}

/** TypeBox's message for a value of another type altogether ("Expected string"), as opposed to a value out of bounds. */
const WRONG_TYPE = /^Expected \w+$/;

function validationErrors(error: ValidationError): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of (error.all as ValueIssue[]).flatMap(specific)) {
    const path = "path" in e && typeof e.path === "string" ? e.path : "";
    const field = `${error.type}${path.replaceAll("/", ".")}`;
    // A schema's own `error` says it in words ("must be a whole number from 1 to 100"), else TypeBox's message.
    const own = "schema" in e ? (e.schema as { error?: unknown }).error : undefined;
    const message = typeof own === "string" ? own : "message" in e && typeof e.message === "string" ? e.message : "is not valid";
    const key = `${field}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field, detail: message });
  }
  return out.slice(0, 20);
}
