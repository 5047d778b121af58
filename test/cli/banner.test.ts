import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

const ENTRY = resolve(import.meta.dir, "../../src/index.ts");

const started: { proc: Subprocess<"pipe" | "ignore", "pipe", "pipe">; terminal: boolean; dir: string }[] = [];
afterEach(async () => {
  for (const { proc, terminal, dir } of started.splice(0)) {
    // At a terminal, as a person stops it: Ctrl+C, which the terminal turns into SIGINT for the service (a signal to
    // `script` would leave the service running without it).
    if (terminal) (proc.stdin as import("bun").FileSink).write("\x03");
    else proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * `connector-service serve` on a fresh data directory, its stdout a terminal (a pseudo-terminal made by util-linux
 * `script`) or a pipe; resolves with what it wrote once `done` says the start is over.
 */
async function serve(terminal: boolean, done: (out: string) => boolean): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "cs-banner-"));
  const command = [process.execPath, ENTRY, "serve"];
  const proc = Bun.spawn(terminal ? ["script", "-qefc", `exec ${command.join(" ")}`, "/dev/null"] : command, {
    // `exec`: the service itself, not a shell around it, is what the terminal's Ctrl+C reaches.
    env: { PATH: process.env.PATH!, HOME: dir, SHELL: "/bin/sh", SERVER__PORT: "0", DATABASE__PATH: join(dir, "cs.db") },
    stdin: terminal ? "pipe" : "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  started.push({ proc, terminal, dir });
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let out = "";
  const deadline = Date.now() + 20_000;
  while (!done(out)) {
    if (Date.now() > deadline) throw new Error(`the start did not finish; it wrote:\n${out}`);
    const { value, done: ended } = await reader.read();
    if (ended) throw new Error(`serve ended; it wrote:\n${out}${await new Response(proc.stderr).text()}`);
    out += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  return out.replaceAll("\r\n", "\n"); // a terminal's line endings
}

const basic = (username: string, password: string) => `Basic ${btoa(`${username}:${password}`)}`;

describe("the first start", () => {
  test("at a terminal: a plain banner with the console and Swagger URLs, the administrator and its password, the data", async () => {
    const out = await serve(true, (text) => text.includes("Stop with Ctrl+C."));
    const banner = out.slice(out.indexOf("connector-service "));
    const console_ = /Console\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(banner)![1]!;
    expect(banner).toContain(`API docs     ${console_}/docs`);
    expect(banner).toMatch(/User\s+admin\n/);
    expect(banner).toMatch(/Database\s+\/.*cs-banner-.*\/cs\.db\n/);
    const password = /Password\s+(\S+)\s+\(generated now and shown this once/.exec(banner)![1]!;
    const me = await fetch(`${console_}/api/v1/users/me`, { headers: { authorization: basic("admin", password) } });
    expect(me.status).toBe(200);
    // Shown once: the log line that says the administrator was made points at the banner instead of repeating it.
    expect(out.split(password)).toHaveLength(2);
    expect(out).toContain("generated password is shown this once in the banner below");
  }, 30_000);

  test("to a program (stdout a pipe): JSON lines only, the generated password in the administrator's line", async () => {
    const out = await serve(false, (text) => text.includes('"msg":"connector-service listening"'));
    const lines = out.trim().split("\n");
    const parsed = lines.map((line) => JSON.parse(line));
    const admin = parsed.find((line) => line.msg.startsWith("created the bootstrap administrator"));
    expect(admin.generated).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(out).not.toContain("is running");
  }, 30_000);
});
