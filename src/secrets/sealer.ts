import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Seals secrets at rest with AES-256-GCM (NIST SP 800-38D): a fresh 96-bit IV per value and the
 * 128-bit tag. `context` is bound as additional authenticated data, so a sealed value copied to another
 * row or column fails to open instead of leaking into the wrong place.
 */
export type Sealer = {
  seal(plaintext: string, context: string): string;
  open(sealed: string, context: string): string;
};

/** Key rotation's step for one value: open it (under whichever key sealed it) and seal it again under the new key. */
export type Reseal = (sealed: string, context: string) => string;

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Seals with `key`; opens with `key`, else with one of `previous` (a rotation that was interrupted leaves values
 * under both: the tag tells which key sealed a value).
 */
export function createSealer(key: Uint8Array, previous: readonly Uint8Array[] = []): Sealer {
  for (const k of [key, ...previous]) if (k.length !== 32) throw new Error("a sealing key must be 32 bytes");
  const openWith = (k: Uint8Array, raw: Buffer, context: string) => {
    const iv = raw.subarray(0, IV_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    const decipher = createDecipheriv("aes-256-gcm", k, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString("utf8");
  };
  return {
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64")}`;
    },
    open(sealed, context) {
      const [version, data] = sealed.split(":", 2);
      if (version !== VERSION || !data) throw new Error("unknown sealed value format");
      const raw = Buffer.from(data, "base64");
      try {
        return openWith(key, raw, context);
      } catch (e) {
        for (const k of previous) {
          try {
            return openWith(k, raw, context);
          } catch {
            // not this one either
          }
        }
        throw e;
      }
    },
  };
}
