/**
 * Start-up: how long the compiled binary takes from spawn to its first `200` on `GET /healthz`, on first start (a
 * fresh directory: no database, no key file, the administrator to create) and on an existing database (second start),
 * and then to its first `200` on `GET /readyz`.
 *
 *   npm run build && bun bench/startup.ts [--rounds 15] [--binary dist/connector-service]
 *
 * Each round starts the binary as production does (`connector-service serve`, its own environment only: it re-executes
 * itself once to raise BUN_CONFIG_MAX_HTTP_REQUESTS), polls /healthz every 2 ms (a refused connection is retried),
 * then /readyz, and stops it (SIGTERM; SIGKILL after 5 s). First and second starts alternate which goes first from
 * round to round. The breakdown, from the same rounds plus two more spawns per round:
 *
 * - the milestones the service logs (wall-clock ms from spawn; the log has ms precision): the key file created, the
 *   database open and migrated, the generated administrator's password shown, the "listening" line; and, when the
 *   build logs it (LOG__LEVEL=debug, "start-up phases"), each phase of `startService` and where the final process
 *   image began;
 * - `connector-service version`: spawn to exit, the runtime and the whole module graph loaded once, nothing else;
 * - a second start with BUN_CONFIG_MAX_HTTP_REQUESTS already set: no re-execution, so the difference to a plain
 *   second start is what the re-execution costs.
 *
 * Everything binds 127.0.0.1; every start is bounded (15 s) and every child stopped at the end, also on an error or
 * Ctrl-C. Before measuring, check the machine is quiet: the 1-minute load average is printed with the results.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "../test/peers/ports";

const ROOT = resolve(import.meta.dir, "..");
const START_TIMEOUT_MS = 15_000;
const POLL_MS = 2;
const children = new Set<Bun.Subprocess>();

type Kind = "first" | "second" | "second, no re-exec";
type Start = {
  kind: Kind;
  healthz_ms: number;
  readyz_ms: number;
  /** Milestones from the service's log (ms after spawn, wall clock), by message. */
  milestones: Record<string, number>;
  /** The "start-up phases" debug line, when the build writes one. */
  phases?: Record<string, number>;
};

const MILESTONES: Record<string, string> = {
  "created a new sealing key file": "key file created",
  "database ready": "database ready",
  "connector-service listening": "listening line",
};

function spawn(command: string[], options: Parameters<typeof Bun.spawn>[1]) {
  const proc = Bun.spawn(command, options);
  children.add(proc);
  void proc.exited.then(() => children.delete(proc));
  return proc;
}

async function stop(proc: Bun.Subprocess): Promise<void> {
  proc.kill("SIGTERM");
  if ((await Promise.race([proc.exited.then(() => true), Bun.sleep(5_000).then(() => false)])) === false) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}

async function stopAll() {
  await Promise.all([...children].map(stop));
}

/** The first 200 of `url`, polled every POLL_MS; a refused connection (nothing listens yet) is retried. */
async function firstOk(url: string, until: number): Promise<number> {
  for (;;) {
    const response = await fetch(url, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
    if (response) {
      await response.arrayBuffer();
      if (response.status === 200) return performance.now();
    }
    if (performance.now() > until) throw new Error(`${url} did not answer 200 within ${START_TIMEOUT_MS} ms`);
    await Bun.sleep(POLL_MS);
  }
}

async function start(binary: string, kind: Kind, database: string, cwd: string): Promise<Start> {
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH!,
    SERVER__HOST: "127.0.0.1",
    SERVER__PORT: String(port),
    DATABASE__PATH: database,
    // The phases line, if this build has one; nothing else is logged at debug during a start.
    LOG__LEVEL: "debug",
  };
  if (kind === "second, no re-exec") env.BUN_CONFIG_MAX_HTTP_REQUESTS = "8192";
  const wall = Date.now();
  const t0 = performance.now();
  const proc = spawn([binary, "serve"], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const lines: string[] = [];
  const reading = (async () => {
    let buffered = "";
    const decoder = new TextDecoder();
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      buffered += decoder.decode(chunk.value, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        lines.push(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
      }
    }
  })();
  try {
    const until = t0 + START_TIMEOUT_MS;
    const exited = proc.exited.then(async (code) => {
      throw new Error(
        `the service exited (${code}) before answering: ${await new Response(proc.stderr as ReadableStream).text()}`,
      );
    });
    const healthz = await Promise.race([firstOk(`http://127.0.0.1:${port}/healthz`, until), exited]);
    const readyz = await Promise.race([firstOk(`http://127.0.0.1:${port}/readyz`, until), exited]);
    // The log lines written by then (the buffered logger writes once per event-loop turn).
    await Bun.sleep(20);
    const milestones: Record<string, number> = {};
    let phases: Record<string, number> | undefined;
    for (const line of lines) {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue;
      }
      const msg = String(parsed.msg);
      const at = Date.parse(String(parsed.time)) - wall;
      if (MILESTONES[msg]) milestones[MILESTONES[msg]] = at;
      if (parsed.generated) milestones["admin password shown"] = at;
      if (msg === "start-up phases") {
        phases = parsed.phases_ms as Record<string, number>;
        milestones["final process image began"] = Number(parsed.image_started_at) - wall;
      }
    }
    return { kind, healthz_ms: healthz - t0, readyz_ms: readyz - t0, milestones, ...(phases && { phases }) };
  } finally {
    await stop(proc);
    await reading.catch(() => undefined);
  }
}

/** Spawn to exit of `connector-service version`: the runtime and the module graph, once. */
async function version(binary: string, cwd: string): Promise<number> {
  const t0 = performance.now();
  const proc = spawn([binary, "version"], { cwd, env: { PATH: process.env.PATH! }, stdout: "ignore", stderr: "ignore" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), START_TIMEOUT_MS);
  await proc.exited;
  clearTimeout(timer);
  return performance.now() - t0;
}

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
};
const fmt = (n: number | undefined) => (n === undefined ? "-" : n.toFixed(1));

async function main(work: string) {
  const args = new Map<string, string>();
  for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
  const rounds = Number(args.get("rounds") ?? 15);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 1000) throw new Error("--rounds must be an integer from 1 to 1000");
  const binary = resolve(ROOT, args.get("binary") ?? "dist/connector-service");
  if (!(await Bun.file(binary).exists())) throw new Error(`${binary} is missing: run npm run build first`);
  const load = readFileSync("/proc/loadavg", "utf8").trim().split(" ").slice(0, 3).join(" ");

  // The existing database: made by one start (not measured), reused by every second start.
  const existing = join(work, "existing", "data", "cs.db");
  await start(binary, "first", existing, work);
  // One warm-up of each, so that the first measured round does not pay for a cold page cache.
  await start(binary, "second", existing, work);
  await version(binary, work);

  const starts: Start[] = [];
  const versions: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const fresh = () => join(mkdtempSync(join(work, "first-")), "data", "cs.db");
    const order: Kind[] = round % 2 === 0 ? ["first", "second"] : ["second", "first"];
    for (const kind of order) starts.push(await start(binary, kind, kind === "first" ? fresh() : existing, work));
    starts.push(await start(binary, "second, no re-exec", existing, work));
    versions.push(await version(binary, work));
    process.stderr.write(`round ${round + 1}/${rounds}\n`);
  }

  console.log(
    `start-up of ${binary}: ${rounds} rounds, 1-minute load before: ${load} (after: ${readFileSync("/proc/loadavg", "utf8").trim().split(" ").slice(0, 3).join(" ")})`,
  );
  console.log("");
  console.log("start                     healthz p50  healthz p90   readyz p50   readyz p90   (ms from spawn)");
  for (const kind of ["first", "second", "second, no re-exec"] as Kind[]) {
    const of = starts.filter((s) => s.kind === kind);
    const h = of.map((s) => s.healthz_ms);
    const r = of.map((s) => s.readyz_ms);
    console.log(
      `${kind.padEnd(24)} ${fmt(quantile(h, 0.5)).padStart(12)} ${fmt(quantile(h, 0.9)).padStart(12)} ${fmt(quantile(r, 0.5)).padStart(12)} ${fmt(quantile(r, 0.9)).padStart(12)}`,
    );
  }
  console.log(
    `${"version (spawn to exit)".padEnd(24)} ${fmt(quantile(versions, 0.5)).padStart(12)} ${fmt(quantile(versions, 0.9)).padStart(12)}`,
  );

  console.log("");
  console.log("milestones in the service's log, median ms from spawn:");
  for (const kind of ["first", "second"] as Kind[]) {
    const of = starts.filter((s) => s.kind === kind);
    const names = [...new Set(of.flatMap((s) => Object.keys(s.milestones)))];
    const cells = names.map(
      (name) =>
        `${name} ${fmt(
          quantile(
            of.flatMap((s) => s.milestones[name] ?? []),
            0.5,
          ),
        )}`,
    );
    console.log(`  ${kind.padEnd(8)} ${cells.join(", ")}`);
  }
  const withPhases = starts.filter((s) => s.phases && s.kind !== "second, no re-exec");
  if (withPhases.length) {
    console.log("");
    console.log('phases of startService (the build\'s "start-up phases" line), median ms:');
    for (const kind of ["first", "second"] as Kind[]) {
      const of = withPhases.filter((s) => s.kind === kind);
      const names = [...new Set(of.flatMap((s) => Object.keys(s.phases!)))];
      console.log(
        `  ${kind.padEnd(8)} ${names
          .map(
            (name) =>
              `${name} ${fmt(
                quantile(
                  of.map((s) => s.phases![name] ?? 0),
                  0.5,
                ),
              )}`,
          )
          .join(", ")}`,
      );
    }
  }
}

const work = mkdtempSync(join(tmpdir(), "cs-bench-startup-"));
process.once("SIGINT", () => void stopAll().finally(() => process.exit(130)));
try {
  await main(work);
} finally {
  await stopAll();
  rmSync(work, { recursive: true, force: true });
}
