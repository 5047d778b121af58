import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/**
 * The key that seals, and (`previous`) a key that may still open values: the next key of a rotation that was
 * interrupted between re-sealing the database and replacing the key file.
 */
export type KeySource = { key: Uint8Array; previous: Uint8Array[]; origin: "setting" | "file-created" | "file" | "ephemeral" };

/** Where a rotation keeps the new key until the database is re-sealed under it (then it replaces the key file). */
export const nextKeyFile = (keyFile: string) => `${keyFile}.next`;

/**
 * The sealing key: SECRETS__KEY when set, else the key file beside the database, created on first
 * start with mode 0600 (exclusive create, so two processes starting together agree on one key).
 */
export function loadSealingKey(setting: string | undefined, keyFile: string | undefined): KeySource {
  if (setting !== undefined) return { key: Buffer.from(setting, "base64"), previous: [], origin: "setting" };
  if (keyFile === undefined) return { key: randomBytes(32), previous: [], origin: "ephemeral" };
  mkdirSync(dirname(keyFile), { recursive: true, mode: 0o700 });
  const created = createKeyFile(keyFile);
  const next = nextKeyFile(keyFile);
  return {
    key: readPrivateKeyFile(keyFile),
    previous: existsSync(next) ? [readPrivateKeyFile(next)] : [],
    origin: created ? "file-created" : "file",
  };
}

/**
 * Writes a new random key to `file` (mode 0600, through to the disk) unless the file exists; answers whether it
 * wrote one. Exclusive create: two processes never write two keys.
 */
export function createKeyFile(file: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, "wx", 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  }
  try {
    writeSync(fd, `${randomBytes(32).toString("base64")}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** A key file that only its owner can read, holding the base64 of 32 bytes. */
export function readPrivateKeyFile(file: string): Uint8Array {
  const mode = statSync(file).mode & 0o777;
  if (mode & 0o077) throw new KeyFileError(file, `is readable by others (mode ${mode.toString(8)}); chmod 600 it`);
  const key = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
  if (key.length !== 32) throw new KeyFileError(file, "does not hold the base64 encoding of 32 bytes");
  return key;
}

export class KeyFileError extends Error {
  constructor(file: string, problem: string) {
    super(`key file ${file} ${problem}`);
  }
}
