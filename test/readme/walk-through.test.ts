import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ADMIN, startTestService, type TestService } from "../support/service";

/**
 * The README's five minutes to a tool call, run as a newcomer would paste it: the curl block marked "walk-through"
 * with bash (only its two settings changed: the service's address and the administrator's password), then the SDK
 * snippet with Bun, both against a fresh service with the demo connector of the built-in presets.
 */
const ROOT = resolve(import.meta.dir, "../..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** The fenced block of `language` that follows `marker` in the README (the first one, when no marker). */
function block(language: string, marker = ""): string {
  const from = README.indexOf(marker);
  if (from < 0) throw new Error(`the README has no ${marker}`);
  const found = README.slice(from).match(new RegExp("```" + language + "\\n([\\s\\S]*?)```"));
  if (!found) throw new Error(`the README has no ${language} block after ${marker}`);
  return found[1]!;
}

let service: TestService;
beforeAll(async () => {
  // The README's walk-through is of the default store, SQLite (managed servers on PostgreSQL take the kubernetes runtime).
  service = await startTestService({ DATABASE__PATH: ":memory:" });
});
afterAll(() => service.stop());

async function bash(script: string, env: Record<string, string> = {}) {
  const run = Bun.spawn(["bash", "-e", "-o", "pipefail", "-c", script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(run.stdout).text(),
    new Response(run.stderr).text(),
    run.exited,
  ]);
  return { stdout, stderr, code };
}

test("the curl walk-through reaches a tool call as written: token, demo connector, session, echo, session ended", async () => {
  const script = block("sh", "<!-- walk-through")
    .replace(/^CS=.*$/m, `CS=${service.url}`)
    .replace(/^ADMIN=.*$/m, `ADMIN='${ADMIN.username}:${ADMIN.password}'`);
  // What a newcomer reads on the screen: the connect answer's state, the tool list and the echo.
  const { stdout, stderr, code } = await bash(`${script}\nprintf "\\nID=%s\\nTOKEN=%s\\n" "$ID" "$TOKEN"`);
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  expect(stdout).toContain("connected");
  expect(stdout).toContain('"name":"echo"');
  expect(stdout).toContain('"text":"hello"');

  // The SDK snippet, with the id and token the walk-through left, from a file inside the project (its imports resolve).
  const id = stdout.match(/^ID=(.+)$/m)![1]!;
  const token = stdout.match(/^TOKEN=(.+)$/m)![1]!;
  const dir = mkdtempSync(join(ROOT, ".test-data-readme-"));
  try {
    writeFileSync(join(dir, "snippet.ts"), block("ts", "### With the TypeScript SDK"));
    const sdk = Bun.spawn([process.execPath, join(dir, "snippet.ts")], {
      cwd: ROOT,
      env: { PATH: process.env.PATH!, CS: service.url, ID: id, TOKEN: token },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, exit] = await Promise.all([new Response(sdk.stdout).text(), new Response(sdk.stderr).text(), sdk.exited]);
    expect({ exit, err }).toEqual({ exit: 0, err: "" });
    // add(2, 3), as the snippet calls it.
    expect(out).toContain("5");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

test("the virtual server command makes one MCP URL of two connectors as written", async () => {
  const ids: string[] = [];
  for (const name of ["GitHub", "Linear"]) {
    const created = await service.api("POST", "/api/v1/connectors", {
      body: { url: "mcp+stdio://demo", metadata: { name } },
    });
    expect(created.status).toBe(201);
    ids.push(created.body.id);
  }
  const { stdout, stderr, code } = await bash(block("sh", "## Virtual servers"), {
    CS: service.url,
    ADMIN: `${ADMIN.username}:${ADMIN.password}`,
    GITHUB: ids[0]!,
    LINEAR: ids[1]!,
  });
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  const answer = JSON.parse(stdout);
  expect(answer.mcp_url).toBe(`${service.url}/api/v1/virtual-servers/${answer.id}/mcp`);
  expect(answer.members.map((m: { prefix: string }) => m.prefix)).toEqual(["github", "linear"]);
});
