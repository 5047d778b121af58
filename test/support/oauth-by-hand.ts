import { createHash, randomBytes } from "node:crypto";
import type { Send } from "./oauth-client";

/**
 * An OAuth client of the service's authorization server written out step by step, for tests that must send what
 * the SDK client never would (a wrong verifier, a code twice, another client's code).
 */
export const REDIRECT_URI = "http://127.0.0.1:33418/callback";

/** [RFC 7636 §4.1–4.2](https://www.rfc-editor.org/rfc/rfc7636#section-4.1): a verifier and its S256 challenge. */
export function pkce() {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

export function byHand(send: Send, base: string) {
  const form = (path: string, fields: Record<string, string>) =>
    send(
      new Request(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields).toString(),
      }),
    );
  return {
    /** Registers a public client (RFC 7591); its client_id. */
    async register(body: Record<string, unknown> = { redirect_uris: [REDIRECT_URI], client_name: "By hand" }): Promise<string> {
      const res = await send(
        new Request(`${base}/oauth/register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
      if (res.status !== 201) throw new Error(`registration answered ${res.status}: ${await res.text()}`);
      return (await res.json()).client_id;
    },
    /** The authorization URL a client would open in the person's browser. */
    authorizeUrl(params: {
      client_id: string;
      challenge: string;
      resource?: string;
      redirect_uri?: string;
      state?: string;
      scope?: string;
    }): string {
      const url = new URL(`${base}/oauth/authorize`);
      url.searchParams.set("response_type", "code");
      url.searchParams.set("client_id", params.client_id);
      url.searchParams.set("redirect_uri", params.redirect_uri ?? REDIRECT_URI);
      url.searchParams.set("code_challenge", params.challenge);
      url.searchParams.set("code_challenge_method", "S256");
      url.searchParams.set("state", params.state ?? "state-1");
      if (params.resource !== undefined) url.searchParams.set("resource", params.resource);
      if (params.scope !== undefined) url.searchParams.set("scope", params.scope);
      return url.href;
    },
    /** The token endpoint with `fields` (RFC 6749 §4.1.3, §6): its answer as is. */
    token: (fields: Record<string, string>) => form("/oauth/token", fields),
    /** A code for tokens (RFC 6749 §4.1.3) with its PKCE verifier, for `resource` (RFC 8707): the answer as is. */
    exchange: (a: { client_id: string; code: string; verifier: string }, resource: string) =>
      form("/oauth/token", {
        grant_type: "authorization_code",
        client_id: a.client_id,
        code: a.code,
        code_verifier: a.verifier,
        redirect_uri: REDIRECT_URI,
        resource,
      }),
    revoke: (fields: Record<string, string>) => form("/oauth/revoke", fields),
  };
}
