import { readFileSync } from "node:fs";
import { join } from "node:path";

// Run at bundle time (imported `with { type: "macro" }`): the checkpoint thread's program (checkpoint.worker.ts, which
// imports only bun:sqlite) as JavaScript text, inlined into the program. The thread then starts from the same text in
// a source run and in the compiled binary, with no second entry point to find in the binary's file system.
export const checkpointThreadSource = () =>
  new Bun.Transpiler({ loader: "ts" }).transformSync(readFileSync(join(import.meta.dir, "checkpoint.worker.ts"), "utf8"));
