import { createHash } from "node:crypto";

/**
 * Who sent a request to a managed server's gateway, as the service tells it: an opaque digest of the caller's user
 * and credential (the gateway needs to tell callers apart, not to know them). A parked call (parked.ts) is bound to
 * it: a retry from another caller finds nothing waiting. Set by the proxy after its header allowlist, so a client
 * cannot send it (forward/headers.ts); the gateway takes it only with the deployment's token (token.ts).
 */
export const CALLER_HEADER = "x-connector-service-caller";

/** The digest the proxy sends for a caller: the same for every request of one user by one credential. */
export function callerDigest(userId: string, credential: string | undefined): string {
  return createHash("sha256")
    .update(`${userId}\n${credential ?? ""}`)
    .digest("base64url");
}
