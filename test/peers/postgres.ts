import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { freePort } from "./ports";

/**
 * A throwaway PostgreSQL server (Debian's `postgresql` binaries on PATH): a fresh cluster in a temp dir on a free
 * loopback port, trust authentication, its socket inside the temp dir; stopped and deleted by `stop()`. `initdb`
 * refuses to run as root, so as root the cluster belongs to `nobody` and runs as it (`setpriv`, util-linux).
 */
export type Postgres = {
  /** postgres://… of the `postgres` database. */
  url: string;
  /** A new, empty database on this server; its URL. */
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
};

export const POSTGRES_AVAILABLE = Bun.which("initdb") !== null && Bun.which("postgres") !== null;

// setpriv execs the command itself (runuser would stay in between and not pass signals on).
const asServerUser = (command: string[]) =>
  process.getuid?.() === 0 ? ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", ...command] : command;

let databases = 0;

export async function startPostgres(): Promise<Postgres> {
  const dir = mkdtempSync(join(tmpdir(), "cs-pg-"));
  chmodSync(dir, 0o755);
  const data = join(dir, "data");
  if (process.getuid?.() === 0) {
    const nobody = Number(Bun.spawnSync(["id", "-u", "nobody"]).stdout.toString().trim());
    chownSync(dir, nobody, nobody);
  }
  const init = Bun.spawnSync(asServerUser(["initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]), { stdout: "ignore", stderr: "pipe" });
  if (init.exitCode !== 0) throw new Error(`initdb failed: ${init.stderr.toString()}`);
  const port = await freePort();
  const server = Bun.spawn(
    asServerUser([
      "postgres", "-D", data, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", `unix_socket_directories=${dir}`,
      // A test server: durability is not the point, speed is.
      "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200",
    ]),
    { stdout: "ignore", stderr: "pipe" },
  );
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const until = Date.now() + 20_000;
  for (;;) {
    try {
      const sql = new SQL(url, { max: 1, connectionTimeout: 1 });
      await sql`select 1`;
      await sql.close();
      break;
    } catch (e) {
      if (server.exitCode !== null || Date.now() > until) {
        server.kill();
        throw new Error(`postgres did not start: ${(e as Error).message}`);
      }
      await Bun.sleep(50);
    }
  }
  return {
    url,
    async createDatabase() {
      const name = `cs_${process.pid}_${++databases}`;
      const admin = new SQL(url, { max: 1 });
      await admin.unsafe(`CREATE DATABASE ${name}`);
      await admin.close();
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      server.kill("SIGINT"); // fast shutdown
      await server.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
