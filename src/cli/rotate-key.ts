import { renameSync } from "node:fs";
import { and, isNotNull, or } from "drizzle-orm";
import { ConfigError, loadConfig } from "../config/load";
import { openStore } from "../db/open";
import type { Store, TransactionBody } from "../db/store";
import { createKeyFile, KeyFileError, nextKeyFile, readPrivateKeyFile } from "../secrets/key";
import { createSealer, type Reseal } from "../secrets/sealer";
import { afterKey, tableOn, sameKey, TABLES, type Row } from "./tables";

/** Rows read at a time: a table of any size (the audit trail's captures) is re-sealed without holding it all. */
const PAGE = 500;

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
    if (!bytes || bytes.length !== 32)
      throw new ConfigError(NEW_KEY, "must be the base64 encoding of 32 new bytes (e.g. head -c 32 /dev/urandom | base64)");
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
    values = await store.transaction(resealAll(store, reseal));
  } finally {
    await store.close();
  }
  if (config.secrets.key === undefined) renameSync(nextKeyFile(keyFile), keyFile);
  process.stdout.write(
    `${JSON.stringify({
      level: "info",
      msg: "sealing key rotated",
      values_resealed: values,
      ...(config.secrets.key === undefined
        ? { key_file: keyFile }
        : { next_step: `start the service with SECRETS__KEY set to the value of ${NEW_KEY}` }),
    })}\n`,
  );
  return 0;
}

/**
 * Every sealed column of every table in tables.ts re-sealed by `reseal`, in the caller's transaction, `page` rows read
 * at a time; how many values.
 */
export function resealAll(store: Store, reseal: Reseal, page = PAGE): TransactionBody<number> {
  return function* (tx) {
    let count = 0;
    for (const entry of TABLES) {
      const sealed = Object.keys(entry.sealed);
      if (sealed.length === 0) continue;
      const { table, columns, key } = tableOn(store, entry);
      const holding = or(...sealed.map((field) => isNotNull(columns[field]!)));
      for (let last: Row | undefined; ;) {
        const rows: Row[] = yield tx
          .select()
          .from(table as never)
          .where(and(afterKey(entry, key, last), holding))
          .orderBy(...(key as never[]))
          .limit(page);
        for (const row of rows) {
          const patch: Row = {};
          for (const field of sealed) {
            const value = row[field];
            if (typeof value !== "string") continue;
            patch[field] = reseal(value, entry.sealed[field]!(row));
            count++;
          }
          yield tx
            .update(table as never)
            .set(patch as never)
            .where(sameKey(entry, key, row));
        }
        if (rows.length < page) break;
        last = rows.at(-1);
      }
    }
    return count;
  };
}
