/**
 * Checkpoints of an SQLite store on a file, run on a thread of their own (checkpoint.worker.ts). By default SQLite
 * checkpoints in the commit that takes the write-ahead log past 1,000 pages: that commit copies ~4 MB into the database
 * and waits for the disk, ~12 ms here, during which the event loop serves no request — every ~0.4 s while the audit
 * trail records 20,000 messages a second, and ~1 µs per record in all (bench/RESULTS.md, "Checkpoints on a thread"). The thread
 * checkpoints every CHECKPOINT_EVERY_MS instead; if it cannot (it fails to open the file, a checkpoint fails, the
 * thread dies), the connection checkpoints as before. The thread costs ~4–10 MB of memory (a second JavaScript heap;
 * `DATABASE__CHECKPOINT_THREAD=false` goes without it).
 *
 * The connection keeps a backstop, BACKSTOP_PAGES. The log is written again from its start only by a write that finds
 * it all copied (https://www.sqlite.org/wal.html#avoiding_excessively_large_wal_files); a PASSIVE checkpoint that a
 * commit overtakes leaves the last frames uncopied, and with commits back to back (the audit writer catching up) that
 * is every time: the log would grow without bound. Past the backstop a commit copies what is left — the frames since
 * the thread's last turn — and the next write starts the log again.
 */
import type { Database } from "bun:sqlite";
import { checkpointThreadSource } from "./checkpoint.macro" with { type: "macro" };

export const CHECKPOINT_EVERY_MS = 250;
/** SQLite's default: a commit checkpoints when the log has more pages than this. */
const AUTOCHECKPOINT_PAGES = 1000;
/** While the thread runs: the log's pages (4 KiB each, ~16 MB) past which a commit checkpoints what the thread left. */
export const BACKSTOP_PAGES = 4000;

export type ToCheckpointThread = { kind: "start"; path: string; everyMs: number; busyTimeoutMs: number } | { kind: "close" };
export type FromCheckpointThread = { kind: "running" } | { kind: "closed" } | { kind: "failed"; error: string };

/** Bun's Worker, which can stop holding the process open (the DOM type in scope lacks that). */
type Thread = Worker & { unref(): void };

/** The thread's program, inlined at build time, as a URL a Worker starts from (made once per process). */
let program: string | undefined;
const programUrl = () => (program ??= URL.createObjectURL(new Blob([checkpointThreadSource()], { type: "text/javascript" })));

/**
 * Starts checkpointing `sqlite` (open on `path`, in WAL mode) from a thread; `onFailure` hears why the connection
 * checkpoints by itself again. `close()` ends the thread (before the connection closes, which checkpoints last).
 */
export function startCheckpointThread(
  sqlite: Database,
  path: string,
  busyTimeoutMs: number,
  onFailure: (error: string) => void = () => undefined,
) {
  const thread = new Worker(programUrl()) as Thread;
  thread.unref();
  let closed: (() => void) | undefined;
  let stopped = false;
  const fallBack = (error: string) => {
    if (stopped) return;
    stopped = true;
    sqlite.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    thread.terminate();
    onFailure(error);
  };
  thread.onmessage = ({ data }: MessageEvent<FromCheckpointThread>) => {
    // Only once the thread checkpoints does the connection leave it the log's first BACKSTOP_PAGES.
    if (data.kind === "running" && !stopped) sqlite.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`);
    else if (data.kind === "failed") fallBack(data.error);
    else if (data.kind === "closed") closed?.();
  };
  thread.onerror = (event) => fallBack(event.message);
  thread.postMessage({ kind: "start", path, everyMs: CHECKPOINT_EVERY_MS, busyTimeoutMs } satisfies ToCheckpointThread);
  return {
    async close(): Promise<void> {
      if (stopped) return;
      stopped = true;
      await new Promise<void>((resolve) => {
        closed = resolve;
        thread.postMessage({ kind: "close" } satisfies ToCheckpointThread);
        // A thread that does not answer is ended anyway.
        setTimeout(resolve, 1000).unref();
      });
      thread.terminate();
    },
  };
}
