import { Value } from "@sinclair/typebox/value";
import { readCapped } from "../http/read-capped";
import { InvalidClientMetadata, InvalidRequest, NoRedirect } from "./errors";
import { RegistrationBody } from "./model";

/**
 * How the authorization server's endpoints read their requests. Elysia leaves the bodies unread (`FORM`,
 * `JSON_UNREAD`): each endpoint reads its own under a small cap, so that a bad body is refused as the OAuth RFCs say
 * (a JSON error, or a page for the person) rather than as an API problem.
 */

/** OAuth requests are small: forms and registration documents beyond this are refused unread. */
export const MAX_OAUTH_BODY_BYTES = 16 * 1024;

export const FORM: [() => null, "application/x-www-form-urlencoded"] = [() => null, "application/x-www-form-urlencoded"];
export const JSON_UNREAD: [() => null, "application/json"] = [() => null, "application/json"];

/** A small body read under the cap; undefined when over it. */
async function smallBody(request: Request): Promise<string | undefined> {
  if (Number(request.headers.get("content-length") ?? "0") > MAX_OAUTH_BODY_BYTES) return undefined;
  return (await readCapped(request.body, MAX_OAUTH_BODY_BYTES))?.toString("utf8") ?? (request.body ? undefined : "");
}

/** [RFC 6749 §3.2](https://www.rfc-editor.org/rfc/rfc6749#section-3.2): token and revocation requests are forms; throws InvalidRequest. */
export async function readForm(request: Request): Promise<URLSearchParams> {
  if (!/^application\/x-www-form-urlencoded\b/i.test(request.headers.get("content-type") ?? "")) {
    throw new InvalidRequest("the body must be application/x-www-form-urlencoded");
  }
  const text = await smallBody(request);
  if (text === undefined) throw new InvalidRequest(`the body is larger than ${MAX_OAUTH_BODY_BYTES} bytes`);
  const params = new URLSearchParams(text);
  // [RFC 6749 §3.1](https://www.rfc-editor.org/rfc/rfc6749#section-3.1): parameters must not be repeated.
  for (const key of new Set(params.keys())) if (params.getAll(key).length > 1) throw new InvalidRequest(`${key} is repeated`);
  return params;
}

/** [RFC 7591 §3.1](https://www.rfc-editor.org/rfc/rfc7591#section-3.1): client metadata as a JSON object; throws InvalidClientMetadata naming what is wrong. */
export async function readRegistration(request: Request): Promise<RegistrationBody> {
  const text = await smallBody(request);
  if (text === undefined) throw new InvalidClientMetadata(`the registration is larger than ${MAX_OAUTH_BODY_BYTES} bytes`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new InvalidClientMetadata("the registration is not JSON");
  }
  if (!Value.Check(RegistrationBody, body)) {
    const first = Value.Errors(RegistrationBody, body).First();
    throw new InvalidClientMetadata(`${first?.path || "body"}: ${first?.message ?? "is not valid"}`);
  }
  return body;
}

/** The form of the sign-in or consent page, posted by a browser; too large, a page that says so. */
export async function readPageForm(request: Request): Promise<URLSearchParams> {
  const text = await smallBody(request);
  if (text === undefined) throw new NoRedirect("The form is too large.", 413);
  return new URLSearchParams(text);
}
