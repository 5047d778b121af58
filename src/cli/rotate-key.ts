import { createAuditRepository } from "../audit/repository";
import { renameSync } from "node:fs";
import { createConnectorRepository } from "../connectors/repository";
import { ConfigError, loadConfig } from "../config/load";
import { openStore } from "../db/open";
import { createOAuthRepository } from "../oauth/repository";
import { createKeyFile, KeyFileError, nextKeyFile, readPrivateKeyFile } from "../secrets/key";
import { createSealer, type Reseal } from "../secrets/sealer";

const NEW_KEY = "SECRETS__NEW_KEY";

/**
 * `connector-service rotate-key`: every sealed value of the database re-sealed under a new key, in one transaction.
 * Stop the service first (values it sealed meanwhile would be under the old key).
 *
 * - Key file (the default): the new key is written to `secret.key.next` first, the database re-sealed, then the
 *   file renamed over `secret.key`. Interrupted anywhere, nothing is lost: a start finds both keys and opens values
 *   under either; running the command again finishes the rotation.
 * - `SECRETS__KEY`: the new key comes from `SECRETS__NEW_KEY` (base64 of 32 bytes); afterwards, start the service
 *   with `SECRETS__KEY` set to it.
 */
export async function rotateKey(env: Record<string, string | undefined>): Promise<number> {
  try {
    return await rotate(env);
  } catch (e) {
    if (!(e instanceof ConfigError) && !(e instanceof KeyFileError)) throw e;
    process.stderr.write(`connector-service rotate-key: ${e.message}\n`);
    return 2;
  }
}

async function rotate(env: Record<string, string | undefined>): Promise<number> {
  const config = loadConfig(env);
  if (config.database.path === ":memory:") throw new ConfigError("DATABASE__PATH", "is :memory:, which holds nothing to rotate");
  const keyFile = config.secrets.keyFile!;
  let oldKeys: Uint8Array[];
  let newKey: Uint8Array;
  if (config.secrets.key !== undefined) {
    const given = config.secrets.newKey;
    const bytes = given ? Buffer.from(given, "base64") : undefined;
    if (!bytes || bytes.length !== 32) throw new ConfigError(NEW_KEY, "must be the base64 encoding of 32 new bytes (e.g. head -c 32 /dev/urandom | base64)");
    oldKeys = [Buffer.from(config.secrets.key, "base64")];
    newKey = bytes;
  } else {
    oldKeys = [readPrivateKeyFile(keyFile)];
    createKeyFile(nextKeyFile(keyFile));
    newKey = readPrivateKeyFile(nextKeyFile(keyFile));
  }
  // Opens a value under the old key or, if a run was interrupted after its commit, already under the new one.
  const opener = createSealer(oldKeys[0]!, [...oldKeys.slice(1), newKey]);
  const sealer = createSealer(newKey);
  const reseal: Reseal = (sealed, context) => sealer.seal(opener.open(sealed, context), context);

  const store = await openStore(config.database);
  let values: number;
  try {
    // One transaction: every value under the new key, or (interrupted) none.
    values = await store.transaction(function* (tx, lock) {
      return (
        (yield* createConnectorRepository(store).resealAll(reseal)(tx, lock)) +
        (yield* createOAuthRepository(store).resealAll(reseal)(tx, lock)) +
        (yield* createAuditRepository(store).resealAll(reseal)(tx, lock))
      );
    });
  } finally {
    await store.close();
  }
  if (config.secrets.key === undefined) renameSync(nextKeyFile(keyFile), keyFile);
  process.stdout.write(
    `${JSON.stringify({
      level: "info",
      msg: "sealing key rotated",
      values_resealed: values,
      ...(config.secrets.key === undefined ? { key_file: keyFile } : { next_step: `start the service with SECRETS__KEY set to the value of ${NEW_KEY}` }),
    })}\n`,
  );
  return 0;
}
