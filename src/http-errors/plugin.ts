import { Elysia, ValidationError } from "elysia";
import type { Logger } from "../observability/logger";
import { AppError, BadRequest, type FieldError } from "./errors";
import type { RequestIds } from "../http/server";
import { PROBLEM_CONTENT_TYPE, problemType, type Problem } from "./model";

export function problemResponse(problem: Problem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problem), {
    status: problem.status,
    headers: { "content-type": PROBLEM_CONTENT_TYPE, ...headers },
  });
}

export function toProblem(error: AppError, instance?: string): Problem {
  return {
    type: problemType(error.type),
    title: error.title,
    status: error.status,
    detail: error.detail,
    ...(instance && { instance }),
    ...(error.errors && { errors: error.errors }),
  };
}

const instanceOf = (request: Request, requestIds: RequestIds) => {
  const id = requestIds.get(request);
  return id ? `urn:request:${id}` : undefined;
};

/**
 * The one place errors become RFC 9457 problem+json responses (§3): AppErrors as they say; anything else
 * is logged with the request id and answered 500 without any detail of the failure.
 */
export function errorResponse(error: unknown, request: Request, log: Logger, requestIds: RequestIds): Response {
  const instance = instanceOf(request, requestIds);
  if (error instanceof AppError) return problemResponse(toProblem(error, instance), error.headers);
  log.error("unhandled error", { request_id: requestIds.get(request), error: describeError(error) });
  return problemResponse({
    type: problemType("internal"),
    title: "Internal error",
    status: 500,
    detail: "The service failed to handle the request; the log has the details under this request id",
    ...(instance && { instance }),
  });
}

/** Elysia's own errors (validation, parse, no route) as problems; the rest through `errorResponse`. */
export function problemPlugin(log: Logger, requestIds: RequestIds) {
  return new Elysia({ name: "problem" }).onError({ as: "global" }, ({ code, error, request }) => {
    const instance = instanceOf(request, requestIds);
    // Elysia wraps what a body parser throws in its ParseError; ours says what is wrong.
    const cause = code === "PARSE" ? (error as Error).cause : undefined;
    if (cause instanceof AppError) return errorResponse(cause, request, log, requestIds);
    if (code === "VALIDATION" && error instanceof ValidationError) {
      const errors = validationErrors(error);
      const detail = errors.map((e) => `${e.field}: ${e.detail}`).join("; ");
      return problemResponse({
        type: problemType("validation-failed"),
        title: "The request is not valid",
        status: 422,
        detail: detail || "The request does not match the schema",
        ...(instance && { instance }),
        errors,
      });
    }
    if (code === "PARSE") {
      return problemResponse(toProblem(new BadRequest("The request body could not be parsed"), instance));
    }
    if (code === "NOT_FOUND") {
      return problemResponse({
        type: problemType("not-found"),
        title: "Not found",
        status: 404,
        detail: `No route for ${request.method} ${new URL(request.url).pathname}`,
        ...(instance && { instance }),
      });
    }
    return errorResponse(error, request, log, requestIds);
  });
}

function validationErrors(error: ValidationError): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of error.all) {
    const path = "path" in e && typeof e.path === "string" ? e.path : "";
    const field = `${error.type}${path.replaceAll("/", ".")}`;
    const message = "message" in e && typeof e.message === "string" ? e.message : "is not valid";
    const key = `${field}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field, detail: message });
  }
  return out.slice(0, 20);
}

function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { value: String(error) };
}
