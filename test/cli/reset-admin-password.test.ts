import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startTestService } from "../support/service";

const ENTRY = resolve(import.meta.dir, "../../src/index.ts");

/** The command as an operator runs it: a process of its own, on the settings `serve` was given. */
const resetAdminPassword = (env: Record<string, string>) =>
  Bun.spawnSync([process.execPath, ENTRY, "reset-admin-password"], {
    env: { PATH: process.env.PATH!, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });

const basic = (username: string, password: string) => `Basic ${btoa(`${username}:${password}`)}`;

describe("connector-service reset-admin-password", () => {
  let dir: string;
  let env: Record<string, string>;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cs-reset-admin-"));
    // A generated administrator password (AUTH__ADMIN_PASSWORD unset), the key file beside the database.
    env = { DATABASE__PATH: join(dir, "cs.db"), SECRETS__KEY: "", AUTH__ADMIN_PASSWORD: "" };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("on a stopped service's database: a new password signs in, the old one and the console sessions do not, tokens stay", async () => {
    const first = await startTestService(env);
    const created = first.logs.map((line) => JSON.parse(line)).find((line) => line.generated);
    const old: string = created.generated;
    const me = (url: string, authorization: Record<string, string>) =>
      fetch(`${url}/api/v1/users/me`, { headers: authorization });
    expect((await me(first.url, { authorization: basic("admin", old) })).status).toBe(200);
    const signIn = await fetch(`${first.url}/api/v1/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "admin", password: old }),
    });
    expect(signIn.status).toBe(201);
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    expect((await me(first.url, { cookie })).status).toBe(200);
    const token = await fetch(`${first.url}/api/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic("admin", old) },
      body: JSON.stringify({ name: "automation" }),
    });
    const { token: apiToken } = (await token.json()) as { token: string };
    await first.stop();

    const run = resetAdminPassword({ DATABASE__PATH: env.DATABASE__PATH! });
    expect(run.stderr.toString()).toBe("");
    expect(run.exitCode).toBe(0);
    const said = JSON.parse(run.stdout.toString());
    expect(said).toMatchObject({ msg: "administrator password reset", username: "admin", console_sessions_ended: 1 });
    expect(said.password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(said.password).not.toBe(old);

    const second = await startTestService(env);
    try {
      expect((await me(second.url, { authorization: basic("admin", said.password) })).status).toBe(200);
      expect((await me(second.url, { authorization: basic("admin", old) })).status).toBe(401);
      expect((await me(second.url, { cookie })).status).toBe(401);
      expect((await me(second.url, { authorization: `Bearer ${apiToken}` })).status).toBe(200);
      // The start does not create the administrator again, so it shows no password of its own.
      expect(second.logs.some((line) => JSON.parse(line).generated)).toBe(false);
    } finally {
      await second.stop();
    }

    // At a terminal (a pseudo-terminal made by util-linux `script`), the same in plain words.
    const atTerminal = Bun.spawnSync(["script", "-qefc", `exec ${process.execPath} ${ENTRY} reset-admin-password`, "/dev/null"], {
      env: { PATH: process.env.PATH!, SHELL: "/bin/sh", DATABASE__PATH: env.DATABASE__PATH! },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(atTerminal.exitCode).toBe(0);
    const shown = atTerminal.stdout.toString().replaceAll("\r\n", "\n");
    expect(shown).toContain('New password for the administrator "admin" (shown this once):');
    const password = /^ {4}(\S+)$/m.exec(shown)![1]!;
    const third = await startTestService(env);
    try {
      expect((await me(third.url, { authorization: basic("admin", password) })).status).toBe(200);
      expect((await me(third.url, { authorization: basic("admin", said.password) })).status).toBe(401);
    } finally {
      await third.stop();
    }
  }, 30_000);

  test("refuses, changing nothing, where it cannot help: AUTH__ADMIN_PASSWORD set, a database that is not there, none yet", () => {
    const given = resetAdminPassword({ DATABASE__PATH: env.DATABASE__PATH!, AUTH__ADMIN_PASSWORD: "chosen-password" });
    expect(given.exitCode).toBe(2);
    expect(given.stderr.toString()).toContain("AUTH__ADMIN_PASSWORD: is set");

    const nowhere = join(dir, "elsewhere.db");
    const missing = resetAdminPassword({ DATABASE__PATH: nowhere });
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr.toString()).toContain(`DATABASE__PATH: names ${nowhere}, which does not exist`);
    expect(existsSync(nowhere)).toBe(false);

    const empty = join(dir, "empty.db");
    expect(
      Bun.spawnSync([process.execPath, ENTRY, "migrate"], { env: { PATH: process.env.PATH!, DATABASE__PATH: empty } }).exitCode,
    ).toBe(0);
    const none = resetAdminPassword({ DATABASE__PATH: empty });
    expect(none.exitCode).toBe(1);
    expect(none.stderr.toString()).toContain("no administrator yet");
  });
});
