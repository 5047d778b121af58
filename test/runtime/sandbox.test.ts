import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ownExecutable } from "../../src/executable";
import { createLogger } from "../../src/observability/logger";
import {
  bwrapArgs,
  chooseSandbox,
  installRoot,
  prepareSandbox,
  programRoots,
  sandboxed,
  SandboxUnavailable,
} from "../../src/runtime/sandbox";
import { probeCommand } from "../peers/probe-server";
import { mcpClient, proxyUrl, toolText } from "../support/mcp";
import { startTestService, type TestService } from "../support/service";

const ROOT = resolve(import.meta.dir, "../..");

/**
 * The attack: a managed server (the probe, a real stdio MCP server) started through the local driver tries to read
 * the service's key file and database, its /proc environment, to unmount what hides them; and it should still reach
 * the network and write in its own /tmp and home. The data directory is made outside /tmp and the home (which the
 * sandbox replaces anyway), so only its own mask can hide it. With RUNTIME__SANDBOX=none the same probe reads them
 * all: the control that shows the probe would see a leak.
 */
async function probeThroughService(sandbox: "bwrap" | "none") {
  const dataDir = mkdtempSync(join(ROOT, ".test-data-"));
  const marker = join(tmpdir(), `cs-sandbox-marker-${process.pid}`);
  const tmpFile = `/tmp/cs-sandbox-probe-${process.pid}`; // the host's /tmp without a sandbox
  writeFileSync(marker, "the host's /tmp");
  const peer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("pong") });
  let service: TestService | undefined;
  // The service starts in `/`: a working directory that holds the data directory is masked whole, which would hide
  // this checkout (and the probe) too. Only the data directory's own mask is then between the probe and the key.
  // Its home is one of the test's, with a file of the service's in it.
  const home = mkdtempSync(join(ROOT, ".test-data-"));
  writeFileSync(join(home, "service-credentials"), "the service's own");
  const cwd = process.cwd();
  const realHome = process.env.HOME;
  process.chdir("/");
  process.env.HOME = home;
  try {
    service = await startTestService({
      RUNTIME__SANDBOX: sandbox,
      DATABASE__PATH: join(dataDir, "cs.db"),
      SECRETS__KEY: "", // the key file beside the database
      CONNECTOR__PRESETS: JSON.stringify([
        { url: "mcp+stdio://probe", metadata: { name: "Probe" }, stdio: { image: "example/probe", command: probeCommand() } },
      ]),
    }).finally(() => {
      process.chdir(cwd);
      process.env.HOME = realHome;
    });
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://probe" } });
    const connected = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {} });
    expect(connected.body.state).toBe("connected");
    const { client, close } = await mcpClient(proxyUrl(service, created.body.id));
    const call = async (name: string, args: Record<string, unknown> = {}) =>
      toolText(await client.callTool({ name, arguments: args }));
    const who = JSON.parse(await call("whoami"));
    const seen = {
      key: await call("read", { path: join(dataDir, "secret.key") }),
      database: await call("read", { path: join(dataDir, "cs.db") }),
      dataDir: await call("list", { path: dataDir }),
      environ: await call("read", { path: `/proc/${process.pid}/environ` }),
      memory: await call("read", { path: `/proc/${process.pid}/maps` }),
      unmount: await call("run", { argv: ["umount", dataDir] }),
      keyAfterUnmount: await call("read", { path: join(dataDir, "secret.key") }),
      fds: await call("fds"),
      hostTmp: await call("list", { path: tmpdir() }),
      serviceHome: await call("list", { path: home }),
      tmp: await call("write", { path: tmpFile, text: "tmp works" }),
      home: await call("write", { path: join(who.home, "probe.txt"), text: "home works" }),
      network: await call("fetch", { url: `http://127.0.0.1:${peer.port}/` }),
      who,
    };
    await close();
    return {
      seen,
      key: readFileSync(join(dataDir, "secret.key"), "utf8").trim(),
      dataDir,
      home,
      marker,
      logs: service.logs.map((l) => JSON.parse(l)),
    };
  } finally {
    await service?.stop();
    await peer.stop(true);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
    rmSync(marker, { force: true });
    rmSync(tmpFile, { force: true });
  }
}

describe("RUNTIME__SANDBOX=bwrap", () => {
  let probe: Awaited<ReturnType<typeof probeThroughService>>;
  beforeAll(async () => {
    probe = await probeThroughService("bwrap");
  }, 30_000);

  test("a managed server cannot read the key file, the database or the data directory", () => {
    const { seen, key } = probe;
    expect(seen.key).toStartWith("ERROR ENOENT");
    expect(seen.key).not.toContain(key);
    expect(seen.database).toStartWith("ERROR ENOENT");
    expect(seen.dataDir).toBe(""); // an empty mask where the data directory is
  });

  test("nor the service's environment or memory (/proc shows its own processes only), nor can it unmount the mask", () => {
    const { seen, key, dataDir } = probe;
    expect(seen.environ).toStartWith("ERROR ENOENT");
    expect(seen.memory).toStartWith("ERROR ENOENT");
    expect(seen.unmount).not.toStartWith("exit 0");
    expect(seen.keyAfterUnmount).not.toContain(key);
    expect(seen.fds.split("\n").filter((path) => path.startsWith(dataDir))).toEqual([]);
  });

  test("it has a private /tmp and home (the service's are not visible), and the network", () => {
    const { seen, marker } = probe;
    expect(seen.hostTmp).not.toContain(marker.split("/").pop()!);
    expect(seen.who.home).toBe(probe.home); // the service's home, as an empty directory of the server's own
    expect(seen.serviceHome).not.toContain("service-credentials");
    expect(seen.who.cwd).toBe(seen.who.home);
    expect(seen.tmp).toBe("tmp works");
    expect(seen.home).toBe("home works");
    expect(seen.network).toBe("200 pong");
  });

  test("start-up says which sandbox is in force and what it hides", () => {
    const line = probe.logs.find((l) => l.msg === "managed servers run sandboxed");
    expect(line).toMatchObject({ level: "info", sandbox: "bwrap", reason: "RUNTIME__SANDBOX=bwrap" });
    expect(line.hidden).toContain(probe.dataDir);
  });
});

describe("RUNTIME__SANDBOX=none (the control: the same probe sees the leak)", () => {
  let probe: Awaited<ReturnType<typeof probeThroughService>>;
  beforeAll(async () => {
    probe = await probeThroughService("none");
  }, 30_000);

  test("the server reads the key file, the database and the service's environment", () => {
    const { seen, key } = probe;
    expect(seen.key.trim()).toBe(key);
    expect(seen.database).toStartWith("SQLite format 3");
    expect(seen.dataDir).toContain("secret.key");
    expect(seen.environ).toContain("PATH=");
    expect(seen.hostTmp).toContain(probe.marker.split("/").pop()!);
    expect(seen.serviceHome).toContain("service-credentials");
    expect(seen.network).toBe("200 pong");
  });

  test("start-up warns that managed servers run without a sandbox", () => {
    const line = probe.logs.find((l) => l.sandbox === "none");
    expect(line).toMatchObject({ level: "warn", reason: "RUNTIME__SANDBOX=none" });
    expect(line.msg).toContain("WITHOUT a sandbox");
  });
});

describe("choosing the sandbox", () => {
  const missing = () => null;
  const found = () => "/usr/bin/bwrap";

  test("unset: bwrap when it is on PATH and a trial run works", () => {
    expect(chooseSandbox(undefined, found, () => undefined)).toEqual({
      kind: "bwrap",
      program: "/usr/bin/bwrap",
      reason: "RUNTIME__SANDBOX unset, and bwrap runs here",
    });
  });

  test("unset: none, and why, when bwrap is missing or cannot run; the start-up line is a warning", () => {
    expect(chooseSandbox(undefined, missing)).toEqual({
      kind: "none",
      fellBack: true,
      reason: "RUNTIME__SANDBOX unset, and bwrap is not on PATH (Debian's bubblewrap package)",
    });
    const choice = chooseSandbox(undefined, found, () => "bwrap: No permissions to create new namespace");
    expect(choice).toMatchObject({
      kind: "none",
      reason: "RUNTIME__SANDBOX unset, and bwrap: No permissions to create new namespace",
    });
    const lines: string[] = [];
    prepareSandbox(
      choice,
      { database: undefined, keyFile: undefined, files: [], cwd: "/", homes: [] },
      createLogger({ level: "info", write: (l) => lines.push(l) }),
    );
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([{ level: "warn", sandbox: "none", reason: choice.reason }]);
    expect(JSON.parse(lines[0]!).msg).toContain("install bubblewrap, or set RUNTIME__SANDBOX=none");
  });

  test("RUNTIME__SANDBOX=bwrap where it cannot run refuses to start (the CLI test below: a configuration error)", () => {
    for (const [which, trial] of [
      [missing, () => undefined],
      [found, () => "bwrap: setting up uid map: Permission denied"],
    ] as const) {
      let error: unknown;
      try {
        chooseSandbox("bwrap", which, trial);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SandboxUnavailable);
      expect((error as Error).message).toStartWith("is bwrap, but bwrap cannot run here: ");
    }
  });

  test("`connector-service serve` with RUNTIME__SANDBOX=bwrap and no bwrap exits 2 with one line, before it creates anything", () => {
    const work = mkdtempSync(join(tmpdir(), "cs-sandbox-cli-"));
    try {
      const run = Bun.spawnSync([process.execPath, join(ROOT, "src/index.ts"), "serve"], {
        cwd: work,
        env: { PATH: "/nonexistent", RUNTIME__SANDBOX: "bwrap", DATABASE__PATH: join(work, "data/cs.db"), SERVER__PORT: "0" },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(run.exitCode).toBe(2);
      expect(run.stderr.toString().trim().split("\n")).toEqual([
        "connector-service: configuration error: RUNTIME__SANDBOX: is bwrap, but bwrap cannot run here: bwrap is not on PATH (Debian's bubblewrap package) (install bubblewrap, or set RUNTIME__SANDBOX=none)",
      ]);
      expect(Bun.spawnSync(["ls", "-A", work]).stdout.toString()).toBe("");
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});

describe("what the sandbox hides", () => {
  let dir: string; // a working directory with the data directory and the home in it
  let other: string; // a TLS key and a .env file
  beforeAll(() => {
    dir = mkdtempSync(join(ROOT, ".test-data-"));
    other = mkdtempSync(join(ROOT, ".test-data-"));
    for (const name of ["data", "home"]) Bun.spawnSync(["mkdir", "-p", join(dir, name)]);
    writeFileSync(join(dir, "data/cs.db"), "");
    writeFileSync(join(other, "tls.key"), "");
    writeFileSync(join(other, ".env"), "SECRETS__KEY=…");
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(other, { recursive: true, force: true });
  });
  const masks = (args: string[]) =>
    args.flatMap((arg, i) => (arg === "--tmpfs" || (arg === "/dev/null" && args[i - 1] === "--ro-bind") ? [args[i + 1]!] : []));

  test("the working directory when it holds the data directory; the TLS key; a private home; nothing twice", () => {
    const { args, home } = bwrapArgs({
      database: join(dir, "data/cs.db"),
      keyFile: join(dir, "data/secret.key"),
      files: [join(other, "tls.key")],
      cwd: dir,
      homes: [join(dir, "home")],
    });
    expect(masks(args)).toEqual(["/tmp", "/var/tmp", dir, join(other, "tls.key")]);
    // The home is inside the masked working directory: made there, empty, and where the server starts.
    expect(home).toBe(join(dir, "home"));
    expect(args.slice(-4)).toEqual(["--dir", home, "--chdir", home]);
    for (const flag of ["--cap-drop", "--unshare-pid", "--new-session", "--die-with-parent"]) expect(args).toContain(flag);
    expect(args).not.toContain("--unshare-net"); // servers call their APIs
  });

  test("a working directory that does not hold the data: the data directory, and the .env files there", () => {
    const { args, home } = bwrapArgs({
      database: join(dir, "data/cs.db"),
      keyFile: undefined,
      files: [],
      cwd: other,
      homes: ["/"],
    });
    expect(masks(args)).toEqual(["/tmp", "/var/tmp", join(dir, "data"), join(other, ".env")]);
    expect(home).toBe("/tmp"); // no home of its own to mask: /tmp is private anyway
  });
});

describe("a server installed where the sandbox makes things private (a checkout in /tmp or in a home)", () => {
  test("its project is bound back read-only, and a secret inside that project is still masked", () => {
    const project = mkdtempSync(join(tmpdir(), "cs-sandbox-project-"));
    try {
      Bun.spawnSync(["mkdir", "-p", join(project, "bin"), join(project, "node_modules/pkg/dist"), join(project, "data")]);
      writeFileSync(join(project, "package.json"), "{}");
      writeFileSync(join(project, "node_modules/pkg/dist/lib.txt"), "a dependency");
      writeFileSync(join(project, "data/secret.key"), "the key");
      writeFileSync(
        join(project, "bin/server.sh"),
        `cat ${project}/node_modules/pkg/dist/lib.txt; echo; cat ${project}/data/secret.key || echo no-key; touch ${project}/written || echo read-only`,
      );
      expect(installRoot(join(project, "node_modules/pkg/dist/lib.txt"))).toBe(project);
      expect(installRoot(join(project, "bin/server.sh"))).toBe(project);
      expect(programRoots(["/bin/sh", join(project, "bin/server.sh")], ["/tmp"])).toEqual([project]);
      expect(programRoots(["/bin/sh", "/tmp"], ["/tmp"])).toEqual([]); // never a private directory whole
      const choice = chooseSandbox("bwrap");
      const sandbox = prepareSandbox(
        choice,
        { database: undefined, keyFile: join(project, "data/secret.key"), files: [], cwd: "/", homes: [] },
        createLogger({ level: "error" }),
      );
      const run = sandboxed(sandbox, {
        command: "/bin/sh",
        args: [join(project, "bin/server.sh")],
        env: { PATH: "/usr/bin:/bin" },
      });
      const result = Bun.spawnSync([run.command, ...run.args], { env: run.env, stdout: "pipe", stderr: "pipe" });
      expect(result.stdout.toString().trim().split("\n")).toEqual(["a dependency", "no-key", "read-only"]);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });
});

describe("the service's own program (the demo preset) when the sandbox masks the directory it runs from", () => {
  test("run from this checkout with ./data in it: the program is bound back, the data stays hidden", async () => {
    // `npm start` in a checkout: the working directory holds the data, so it is masked whole — src/ and node_modules/
    // with it, unless the program is bound back.
    const data = mkdtempSync(join(ROOT, ".test-data-"));
    writeFileSync(join(data, "secret.key"), "the key");
    try {
      const own = ownExecutable();
      const paths = { database: join(data, "cs.db"), keyFile: join(data, "secret.key"), files: [], cwd: ROOT, homes: [] };
      expect(bwrapArgs(paths).hidden).toContain(ROOT);
      const sandbox = prepareSandbox(chooseSandbox("bwrap"), { ...paths, program: own.files }, createLogger({ level: "error" }));
      const run = (argv: string[]) =>
        sandboxed(sandbox, { command: argv[0]!, args: argv.slice(1), env: { PATH: "/usr/bin:/bin" } });
      const key = run(["/bin/sh", "-c", `cat ${join(data, "secret.key")} || echo no-key; ls ${ROOT}`]);
      const seen = Bun.spawnSync([key.command, ...key.args], { env: key.env, stdout: "pipe", stderr: "pipe" }).stdout.toString();
      expect(seen).toContain("no-key");
      expect(seen).not.toContain("the key");
      expect(seen).not.toContain(".test-data-"); // only the program's files are in the checkout's place
      expect(seen).toContain("src");

      const demo = run([...own.argv, "demo-server"]);
      const client = new Client({ name: "sandbox-tests", version: "1" });
      await client.connect(new StdioClientTransport({ command: demo.command, args: demo.args, env: demo.env, stderr: "pipe" }));
      try {
        expect(toolText(await client.callTool({ name: "echo", arguments: { text: "sandboxed" } }))).toBe("sandboxed");
      } finally {
        await client.close();
      }
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});
