import { driverError, storageFailure, storageRefusal } from "../db/errors";
import type { Logger } from "../observability/logger";
import { AppError, Internal, StorageUnavailable, ValidationFailed, type FieldError } from "./errors";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** [RFC 9457 §3](https://www.rfc-editor.org/rfc/rfc9457#section-3) problem details, plus `errors` naming the offending fields of a 4xx. */
export type ProblemDocument = {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  errors?: FieldError[];
};

/** Problem types are relative URIs under the service ([RFC 9457 §3.1.1](https://www.rfc-editor.org/rfc/rfc9457#section-3.1.1) allows relative references). */
export const problemType = (slug: string) => `/problems/${slug}`;

/**
 * The one renderer of RFC 9457 problem documents (https://www.rfc-editor.org/rfc/rfc9457#section-3): every error
 * path ends here — the Elysia routes (through the problem plugin), Bun's native proxy route and the server's
 * last-resort handler. It knows no framework, so each of them can call it.
 */
export function toProblem(error: AppError, requestId?: string): ProblemDocument {
  return {
    type: problemType(error.type),
    title: error.title,
    status: error.status,
    detail: error.detail,
    ...(requestId && { instance: `urn:request:${requestId}` }),
    ...(error.errors && { errors: error.errors }),
  };
}

export function problemResponse(error: AppError, requestId?: string): Response {
  return new Response(JSON.stringify(toProblem(error, requestId)), {
    status: error.status,
    headers: { "content-type": PROBLEM_CONTENT_TYPE, ...error.headers },
  });
}

/**
 * Any thrown value as a response: an AppError says what it is; a failure of the store (disk full, I/O, busy) is a
 * 503 that says so, and is logged; anything else is a defect, logged with the request id and answered 500 without
 * a word about its cause.
 */
export function errorResponse(error: unknown, log: Logger, requestId?: string): Response {
  if (error instanceof AppError) return problemResponse(error, requestId);
  const refused = storageRefusal(error);
  if (refused) return problemResponse(new ValidationFailed(refused), requestId);
  const storage = storageFailure(error);
  if (storage) {
    log.error("the database refused a request", { request_id: requestId, error: describeError(driverError(error)) });
    return problemResponse(new StorageUnavailable(storage), requestId);
  }
  log.error("unhandled error", { request_id: requestId, error: describeError(driverError(error)) });
  return problemResponse(new Internal(), requestId);
}

/** An error for the log; a driver's error names its codes (the query and its parameters are never logged). */
function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof Error) {
    const { code, errno } = error as { code?: unknown; errno?: unknown };
    return {
      name: error.name,
      message: error.message,
      ...(code !== undefined && { code }),
      ...(errno !== undefined && { errno }),
      stack: error.stack,
    };
  }
  return { value: String(error) };
}
