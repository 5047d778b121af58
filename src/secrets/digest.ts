/**
 * The SHA-256 hex digest under which the service stores what it must recognise but never keep: API tokens, session
 * secrets, OAuth state, the authorization server's codes and tokens. Bun's one-call hash: tokens are digested on every
 * request that carries one.
 */
export const sha256Hex = (value: string): string => Bun.SHA256.hash(value, "hex") as string;
