/**
 * The thread that checkpoints an SQLite store's write-ahead log (checkpoint-thread.ts): a connection of its own to
 * the same file copies what was committed into the database, so the event loop's commits never do it. A PASSIVE
 * checkpoint (https://www.sqlite.org/c3ref/wal_checkpoint_v2.html) waits for no one: it copies what no reader still
 * needs and leaves the rest for the next turn. Inlined as text at build time (checkpoint.macro.ts), so it imports
 * nothing of the service but the message types.
 */
import { Database } from "bun:sqlite";
import type { FromCheckpointThread, ToCheckpointThread } from "./checkpoint-thread";

declare const self: Worker;
const tell = (message: FromCheckpointThread) => postMessage(message);

let db: Database | undefined;
let timer: ReturnType<typeof setInterval> | undefined;

function checkpoint() {
  try {
    db?.query("PRAGMA wal_checkpoint(PASSIVE)").get();
  } catch (e) {
    stop();
    tell({ kind: "failed", error: (e as Error).message });
  }
}

function stop() {
  clearInterval(timer);
  db?.close();
  db = undefined;
}

self.onmessage = ({ data }: MessageEvent<ToCheckpointThread>) => {
  if (data.kind === "close") {
    stop();
    return tell({ kind: "closed" });
  }
  try {
    db = new Database(data.path, { readwrite: true, create: false, strict: true });
    db.exec(`PRAGMA busy_timeout = ${data.busyTimeoutMs}`);
    db.exec("PRAGMA wal_autocheckpoint = 0");
  } catch (e) {
    return tell({ kind: "failed", error: (e as Error).message });
  }
  timer = setInterval(checkpoint, data.everyMs);
  tell({ kind: "running" });
};
