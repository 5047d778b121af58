import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
/** The compiled executable, as `npm run build` writes it. */
export const BINARY = join(ROOT, "dist/connector-service");

let built: Promise<void> | undefined;

/** Builds the executable once per test process (a test file run alone builds it too). */
export function buildBinary(): Promise<void> {
  built ??= (async () => {
    const build = Bun.spawn([process.execPath, "run", "build"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    if ((await build.exited) !== 0) throw new Error(`build failed: ${await new Response(build.stderr).text()}`);
  })();
  return built;
}

/** `read`: resolves once all of stdout has been read into `lines` (after the process exited, it can still be behind). */
export type Started = { proc: Bun.Subprocess<"ignore", "pipe", "pipe">; url: string; lines: string[]; read: Promise<void> };

/**
 * Starts the executable (`program`: a copy of it somewhere else) in `cwd` and waits for its "listening" line; keeps
 * reading its log so it never blocks.
 */
export async function startBinary(cwd: string, env: Record<string, string>, program = BINARY): Promise<Started> {
  const proc = Bun.spawn([program], {
    cwd,
    env: { PATH: process.env.PATH!, SERVER__PORT: "0", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const lines: string[] = [];
  const decoder = new TextDecoder();
  const reader = proc.stdout.getReader();
  let buffered = "";
  let allRead!: () => void;
  const read = new Promise<void>((resolve) => (allRead = resolve));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line: ${lines.join("\n")}`)), 15_000);
    (async () => {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        buffered += decoder.decode(chunk.value, { stream: true });
        let nl: number;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          lines.push(line);
          const parsed = JSON.parse(line);
          if (parsed.msg === "connector-service listening") {
            clearTimeout(timer);
            resolveUrl(parsed.url);
          }
        }
      }
      allRead();
      clearTimeout(timer);
      reject(new Error(`exited before listening: ${lines.join("\n")}\n${await new Response(proc.stderr).text()}`));
    })();
  });
  return { proc, url, lines, read };
}

/** SIGTERM, and the exit code once the process has ended and all it wrote has been read. */
export async function stopBinary(started: Started): Promise<number> {
  started.proc.kill("SIGTERM");
  const code = await started.proc.exited;
  await started.read;
  return code;
}
