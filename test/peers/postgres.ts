import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SQL } from "bun";
import { freePort } from "./ports";

/**
 * A throwaway PostgreSQL server (Debian's `postgresql` programs): a fresh cluster in a temp dir on a free
 * loopback port, trust authentication, its socket inside the temp dir; stopped and deleted by `stop()`. `initdb`
 * refuses to run as root, so as root the cluster belongs to `nobody` and runs as it (`setpriv`, util-linux).
 */
export type Postgres = {
  /** postgres://… of the `postgres` database. */
  url: string;
  /** A new, empty database on this server; its URL. */
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
  /** Stops the server, keeping its data; `resume()` starts it again on the same port. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** Stops it at once, synchronously (for a process that is exiting). */
  kill(): void;
};

/** Where the server programs are: on PATH, else where Debian's `postgresql` puts them (the newest version). */
function serverBin(): string | undefined {
  const onPath = Bun.which("initdb");
  if (onPath) return dirname(realpathSync(onPath));
  const versions = existsSync("/usr/lib/postgresql") ? readdirSync("/usr/lib/postgresql").filter((v) => /^\d+$/.test(v)) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a)).find((v) => existsSync(`/usr/lib/postgresql/${v}/bin/initdb`));
  return newest ? `/usr/lib/postgresql/${newest}/bin` : undefined;
}

// setpriv execs the command itself (runuser would stay in between and not pass signals on).
const asServerUser = (command: string[]) =>
  process.getuid?.() === 0 ? ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", ...command] : command;

let databases = 0;

export async function startPostgres(): Promise<Postgres> {
  const bin = serverBin();
  if (!bin)
    throw new Error(
      "PostgreSQL's server programs (initdb, postgres) are not installed: install Debian's postgresql package (.ci/run does)",
    );
  const dir = mkdtempSync(join(tmpdir(), "cs-pg-"));
  chmodSync(dir, 0o755);
  const data = join(dir, "data");
  if (process.getuid?.() === 0) {
    const nobody = Number(Bun.spawnSync(["id", "-u", "nobody"]).stdout.toString().trim());
    chownSync(dir, nobody, nobody);
  }
  const init = Bun.spawnSync(
    asServerUser([join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]),
    { stdout: "ignore", stderr: "pipe" },
  );
  if (init.exitCode !== 0) throw new Error(`initdb failed: ${init.stderr.toString()}`);
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const run = async () => {
    const proc = Bun.spawn(
      asServerUser([
        join(bin, "postgres"),
        "-D",
        data,
        "-p",
        String(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        `unix_socket_directories=${dir}`,
        // A test server: durability is not the point, speed is.
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
        "-c",
        "max_connections=300",
      ]),
      { stdout: "ignore", stderr: "pipe" },
    );
    const until = Date.now() + 20_000;
    for (;;) {
      try {
        const sql = new SQL(url, { max: 1, connectionTimeout: 1 });
        await sql`select 1`;
        await sql.close();
        return proc;
      } catch (e) {
        if (proc.exitCode !== null || Date.now() > until) {
          proc.kill();
          throw new Error(`postgres did not start: ${(e as Error).message}`);
        }
        await Bun.sleep(50);
      }
    }
  };
  let server = await run();
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
    async pause() {
      server.kill("SIGINT");
      await server.exited;
    },
    async resume() {
      server = await run();
    },
    kill() {
      server.kill("SIGQUIT"); // immediate shutdown: nothing in it is kept
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
