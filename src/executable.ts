import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/** How to run this same program again, and the files that takes. */
export type OwnExecutable = {
  /** The command line that starts it, before its own arguments (e.g. `demo-server`). */
  argv: string[];
  /** What it reads to start: the sandbox must let a managed server see them (runtime/sandbox.ts). */
  files: string[];
};

/**
 * This program as a command line, never a lookup of `connector-service` on PATH (another version may be there, or
 * none). Compiled, the executable is the program (its own files are in `/$bunfs/`, inside it); from source, Bun runs
 * `src/index.ts`, which reads the rest of `src/`, `node_modules/` and `package.json` (the version).
 */
export function ownExecutable(): OwnExecutable {
  if (compiled()) return { argv: [process.execPath], files: [process.execPath] };
  const src = import.meta.dir;
  const root = dirname(src);
  const files = [src, ...["node_modules", "package.json", "tsconfig.json"].map((name) => join(root, name))];
  return { argv: [process.execPath, join(src, "index.ts")], files: [process.execPath, ...files.filter((f) => existsSync(f))] };
}

/** Inside a binary made by `bun build --compile`, modules live in its embedded file system (B:/~BUN/ on Windows). */
const compiled = () => import.meta.path.startsWith("/$bunfs/") || import.meta.path.includes("~BUN");
