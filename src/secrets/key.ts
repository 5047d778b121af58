import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export type KeySource = { key: Uint8Array; origin: "setting" | "file-created" | "file" | "ephemeral" };

/**
 * The sealing key: SECRETS__KEY when set, else the key file beside the database, created on first
 * start with mode 0600 (exclusive create, so two processes starting together agree on one key).
 */
export function loadSealingKey(setting: string | undefined, keyFile: string | undefined): KeySource {
  if (setting !== undefined) return { key: Buffer.from(setting, "base64"), origin: "setting" };
  if (keyFile === undefined) return { key: randomBytes(32), origin: "ephemeral" };
  mkdirSync(dirname(keyFile), { recursive: true, mode: 0o700 });
  try {
    const fd = openSync(keyFile, "wx", 0o600);
    try {
      writeSync(fd, `${randomBytes(32).toString("base64")}\n`);
    } finally {
      closeSync(fd);
    }
    return { key: readKeyFile(keyFile), origin: "file-created" };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  const mode = statSync(keyFile).mode & 0o777;
  if (mode & 0o077) throw new KeyFileError(keyFile, `is readable by others (mode ${mode.toString(8)}); chmod 600 it`);
  return { key: readKeyFile(keyFile), origin: "file" };
}

export class KeyFileError extends Error {
  constructor(file: string, problem: string) {
    super(`key file ${file} ${problem}`);
  }
}

function readKeyFile(file: string): Uint8Array {
  const key = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
  if (key.length !== 32) throw new KeyFileError(file, "does not hold the base64 encoding of 32 bytes");
  return key;
}
