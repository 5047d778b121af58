import { existsSync, readdirSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, normalize, sep } from "node:path";
import { ownExecutable } from "../executable";
import type { StdioCommand } from "../gateway/session";
import type { Logger } from "../observability/logger";

/**
 * How the local driver runs a managed server (RUNTIME__SANDBOX). A server runs as the service's user, so without a
 * sandbox it can read whatever the service can: the key file and the database (every user's tokens), the service's
 * /proc/<pid>/environ (SECRETS__KEY, AUTH__ADMIN_PASSWORD, DATABASE__URL) and its memory.
 *
 * `bwrap` (Debian's bubblewrap) gives each server: the system read-only; a fresh /proc in a PID namespace of its own
 * (no other process of the machine is visible, so neither the service's environment nor its memory); an empty private
 * /tmp, /var/tmp and home (the service's home hidden; the server starts there); the data directory, the key file's
 * directory, the working directory when it holds either, the TLS private key and `.env` files masked; no capability
 * (bwrap run by root keeps them otherwise, and CAP_SYS_ADMIN could unmount a mask); its own session (no TIOCSTI into
 * the service's terminal); death with the service. The network is kept: servers call their APIs.
 */
export type Sandbox =
  { kind: "none" } | { kind: "bwrap"; program: string; home: string; layout: Pick<BwrapArgs, "head" | "tail" | "privateDirs"> };

/** What the service holds that a managed server must not read, and the home a server gets instead of the service's. */
export type ServicePaths = {
  /** The SQLite file (undefined: in memory, or PostgreSQL). */
  database: string | undefined;
  keyFile: string | undefined;
  /** Other secret files (the TLS private key). */
  files: string[];
  cwd: string;
  /** The service's home directories (its HOME, and its account's when that differs): the first becomes the server's. */
  homes: string[];
  /**
   * The service's own program (executable.ts): seen read-only by every server, so the demo preset, which runs it,
   * starts even when the service runs from a directory the sandbox hides (a checkout holding ./data). Code, no secret.
   */
  program?: string[];
};

/** The settings that say where the service's secrets are (config/load.ts's Config has them). */
type SecretSettings = {
  database: { path: string; url: string | undefined };
  secrets: { keyFile: string | undefined };
  server: { tls: { keyFile: string } | undefined };
};

export const servicePaths = (config: SecretSettings): ServicePaths => ({
  database: config.database.path === ":memory:" || config.database.url !== undefined ? undefined : config.database.path,
  keyFile: config.secrets.keyFile,
  files: config.server.tls ? [config.server.tls.keyFile] : [],
  cwd: process.cwd(),
  homes: [...new Set([process.env.HOME || homedir(), homedir()])],
  program: ownExecutable().files,
});

/** `path` itself or something under it. */
const within = (path: string, dir: string) => path === dir || path.startsWith(dir === sep ? dir : dir + sep);

/** The real path (symlinks resolved: a mask on the real directory hides every way to it), or undefined if none. */
function real(path: string | undefined): string | undefined {
  if (path === undefined || !existsSync(path)) return undefined;
  return realpathSync(path);
}
const isDir = (path: string) => statSync(path).isDirectory();

/** SQLite's companions of a database file (write-ahead log, shared memory, rollback journal). */
const databaseFiles = (file: string) => [file, `${file}-wal`, `${file}-shm`, `${file}-journal`];

function envFiles(dir: string): string[] {
  try {
    // Files only: /dev/null cannot be bound over a directory (a `.env` directory would stop every server starting).
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.name.startsWith(".env") && (entry.isFile() || entry.isSymbolicLink()))
      .map((entry) => join(dir, entry.name));
  } catch {
    return []; // a working directory the service cannot list: neither can the server
  }
}

/** What every sandbox has, before the masks of this service's paths (and what the trial run at start uses). */
const BASE_ARGS = [
  "--ro-bind",
  "/",
  "/",
  "--dev",
  "/dev",
  "--unshare-pid",
  "--unshare-ipc",
  "--proc",
  "/proc",
  "--die-with-parent",
  "--new-session",
  "--cap-drop",
  "ALL",
  "--tmpfs",
  "/tmp",
];

/**
 * The bwrap arguments (before `--` and the command) for a server that must not see `paths`' secrets, the private
 * home it gets, and what is hidden. Pure but for looking at which paths exist. `args` is `head` then `tail`: a
 * server's own program directories, when they lie in what is made private, are bound back read-only between the two
 * (see `sandboxed`), and the secrets masked again after them.
 */
export function bwrapArgs(paths: ServicePaths) {
  const dirs: string[] = ["/tmp"];
  const files: string[] = [];
  if (existsSync("/var/tmp")) dirs.push(realpathSync("/var/tmp"));
  const homes = paths.homes.map(real).filter((home): home is string => home !== undefined && home !== sep && isDir(home));
  dirs.push(...homes);
  const privateDirs = [...dirs];
  const privateHome = paths.homes[0] !== undefined && real(paths.homes[0]) === homes[0] ? homes[0]! : "/tmp";
  // The directory of the database and of the key file; `/` cannot be masked whole, so then only the files are.
  const secretDirs: string[] = [];
  const database = real(paths.database);
  const keyFile = real(paths.keyFile);
  for (const [file, companions] of [
    [database, databaseFiles],
    [keyFile, (f: string) => [f]],
  ] as const) {
    if (file === undefined) continue;
    if (dirname(file) === sep) files.push(...companions(file));
    else secretDirs.push(dirname(file));
  }
  // The working directory, when it holds them (the default ./data): it may hold more (backups, settings, .env).
  const cwd = real(paths.cwd);
  if (cwd && cwd !== sep && secretDirs.some((dir) => within(dir, cwd))) secretDirs.push(cwd);
  dirs.push(...secretDirs);
  files.push(...paths.files);
  // `bun` run from a checkout reads .env files from its working directory (the built binary does not).
  if (cwd) files.push(...envFiles(cwd));

  // Parents before children; nothing under a masked directory needs a mask of its own (/tmp is in BASE_ARGS). The
  // secrets are masked on their own even inside a private directory, after whatever is bound back there.
  const secrets = outermost(secretDirs);
  // A private directory inside a masked secret one (a home in the data's working directory) is hidden by that mask.
  const allPrivate = [...new Set(privateDirs)].filter((dir) => !secrets.some((secret) => within(dir, secret)));
  const privates = outermost(allPrivate);
  const secretFiles = [...new Set(files.map((file) => real(file) ?? file))].filter(
    (file) => existsSync(file) && !isDir(file) && !secrets.some((m) => within(file, m)),
  );
  const head = [...BASE_ARGS, ...privates.filter((dir) => dir !== "/tmp").flatMap((dir) => ["--tmpfs", dir])];
  // The service's own program, where a mask hid it, bound back after the masks (as it is named: a checkout's
  // node_modules may be a link to elsewhere, which the program's imports resolve through); a secret directory inside
  // it masked again.
  const program = [...new Set((paths.program ?? []).filter(existsSync).map((path) => normalize(path)))].filter((path) =>
    secrets.some((dir) => within(path, dir) || within(real(path)!, dir)),
  );
  const secretsInProgram = outermost(secretDirs.filter((dir) => program.some((path) => within(dir, path))));
  const tail = [
    ...secrets.flatMap((dir) => ["--tmpfs", dir]),
    ...program.flatMap((path) => ["--ro-bind", path, path]),
    ...secretsInProgram.flatMap((dir) => ["--tmpfs", dir]),
    ...secretFiles.flatMap((file) => ["--ro-bind", "/dev/null", file]),
    // The home is a mask of its own, or a directory made inside /tmp's.
    ...(privates.includes(privateHome) ? [] : ["--dir", privateHome]),
    "--chdir",
    privateHome,
  ];
  // Every private directory, nested ones too: one inside a directory bound back must be made private again.
  return {
    args: [...head, ...tail],
    head,
    tail,
    home: privateHome,
    hidden: [...privates, ...secrets, ...secretFiles],
    privateDirs: allPrivate,
  };
}
type BwrapArgs = ReturnType<typeof bwrapArgs>;

/** The directories of `dirs` that are under no other of them. */
function outermost(dirs: string[]): string[] {
  const out: string[] = [];
  for (const dir of [...new Set(dirs)].sort((a, b) => a.length - b.length)) if (!out.some((m) => within(dir, m))) out.push(dir);
  return out;
}

/**
 * Where a program given by absolute path is installed: the project that holds its `node_modules` (whose packages it
 * loads), else the nearest directory up from it with a package.json, else its own directory.
 */
export function installRoot(path: string): string {
  const parts = path.split(sep);
  const modules = parts.indexOf("node_modules");
  if (modules > 0) return parts.slice(0, modules).join(sep) || sep;
  for (let dir = dirname(path); dir !== sep; dir = dirname(dir)) if (existsSync(join(dir, "package.json"))) return dir;
  return dirname(path);
}

/**
 * The directories of a server's program and of the files its arguments name, bound back read-only when they lie in
 * what the sandbox makes private (a checkout in /tmp or a home): never a private directory itself or one holding it.
 */
export function programRoots(argv: string[], privateDirs: string[]): string[] {
  const roots: string[] = [];
  for (const arg of argv) {
    if (!arg.startsWith(sep) || !existsSync(arg)) continue;
    // The path as the server will open it, and where it really is (either may lie in a private directory).
    for (const path of new Set([normalize(arg), real(arg)!])) {
      const root = installRoot(path);
      if (privateDirs.some((dir) => within(root, dir) && !within(dir, root))) roots.push(root);
    }
  }
  return outermost(roots);
}

/** Runs `command` as `sandbox` says: itself, or inside bwrap with the private home as HOME. */
export function sandboxed(sandbox: Sandbox, command: StdioCommand): StdioCommand {
  if (sandbox.kind === "none") return command;
  const { head, tail, privateDirs } = sandbox.layout;
  const roots = programRoots([command.command, ...command.args], privateDirs);
  // A private directory inside a directory bound back (a home inside the checkout) is made private again on top of it;
  // the secrets are masked after both (`tail`: bwrap mounts in order).
  const again = outermost(privateDirs.filter((dir) => roots.some((root) => within(dir, root) && dir !== root)));
  const args = [
    ...head,
    ...roots.flatMap((root) => ["--ro-bind", root, root]),
    ...again.flatMap((dir) => ["--tmpfs", dir]),
    ...tail,
    "--",
    command.command,
    ...command.args,
  ];
  return { command: sandbox.program, args, env: { ...command.env, HOME: sandbox.home } };
}

/** Runs `true` in a bare sandbox: undefined when that works, else why not (bwrap's first line of complaint). */
export function trialRun(program: string): string | undefined {
  const result = Bun.spawnSync([program, ...BASE_ARGS, "--", Bun.which("true") ?? "/bin/true"], {
    stdout: "ignore",
    stderr: "pipe",
    timeout: 10_000,
  });
  if (result.exitCode === 0) return undefined;
  const said = result.stderr.toString().trim().split("\n")[0];
  return said || (result.exitCode === null ? "it did not finish within 10 s" : `it exited with code ${result.exitCode}`);
}

/** RUNTIME__SANDBOX=bwrap, and bwrap cannot run here: the start stops (a setting's error, exit code 2). */
export class SandboxUnavailable extends Error {}

/** RUNTIME__SANDBOX decided: bwrap's program, or none and why. */
export type SandboxChoice =
  { kind: "bwrap"; program: string; reason: string } | { kind: "none"; reason: string; fellBack: boolean };

/**
 * RUNTIME__SANDBOX, decided at start before anything is created. Unset: bwrap when it is on PATH and a trial run
 * works, else none (said in a warning). `bwrap` that cannot run throws SandboxUnavailable.
 */
export function chooseSandbox(
  setting: "bwrap" | "none" | undefined,
  which: (program: string) => string | null = Bun.which,
  trial = trialRun,
): SandboxChoice {
  if (setting === "none") return { kind: "none", reason: "RUNTIME__SANDBOX=none", fellBack: false };
  const program = which("bwrap");
  const why = program === null ? "bwrap is not on PATH (Debian's bubblewrap package)" : trial(program);
  if (why === undefined)
    return {
      kind: "bwrap",
      program: program!,
      reason: setting === "bwrap" ? "RUNTIME__SANDBOX=bwrap" : "RUNTIME__SANDBOX unset, and bwrap runs here",
    };
  if (setting === "bwrap")
    throw new SandboxUnavailable(
      `is bwrap, but bwrap cannot run here: ${why} (install bubblewrap, or set RUNTIME__SANDBOX=none)`,
    );
  return { kind: "none", reason: `RUNTIME__SANDBOX unset, and ${why}`, fellBack: true };
}

/** The sandbox for this service's paths (once its data directory and key file exist), said in one start-up line. */
export function prepareSandbox(choice: SandboxChoice, paths: ServicePaths, log: Logger): Sandbox {
  if (choice.kind === "none") {
    const what =
      "managed servers run WITHOUT a sandbox: they can read whatever the service can, its key file and database included";
    log.warn(choice.fellBack ? `${what}; install bubblewrap, or set RUNTIME__SANDBOX=none to say this is meant` : what, {
      sandbox: "none",
      reason: choice.reason,
    });
    return { kind: "none" };
  }
  const layout = bwrapArgs(paths);
  const { home, hidden } = layout;
  log.info("managed servers run sandboxed", {
    sandbox: "bwrap",
    reason: choice.reason,
    hidden,
    // Not wrapped: podman or docker runs them in a container, which is their sandbox (the engine needs what bwrap hides).
    images: "presets that give only an image run in their container engine instead",
  });
  return { kind: "bwrap", program: choice.program, home, layout };
}
