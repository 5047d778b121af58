import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBearerServer } from "../peers/bearer-server";
import { mcpClient } from "../support/mcp";
import { apiClient } from "../support/service";
import { type Api } from "../support/api";
import { BINARY, buildBinary, startBinary, stopBinary } from "../support/binary";

const work = mkdtempSync(join(tmpdir(), "cs-binary-"));
const dataDir = join(work, "data");
const start = (env: Record<string, string> = {}) => startBinary(work, { DATABASE__PATH: join(dataDir, "cs.db"), ...env });
const stop = stopBinary;

beforeAll(async () => {
  await buildBinary();
  // A .env and a bunfig.toml in the working directory must not be read by the binary.
  writeFileSync(join(work, ".env"), "SERVER__PORT=not-a-port\n");
  writeFileSync(join(work, "bunfig.toml"), "this is [not toml\n");
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

test("--help and version answer; an unknown command or a bad setting exits 2 with one line naming it", () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    Bun.spawnSync([BINARY, ...args], { cwd: work, env: { PATH: process.env.PATH!, ...env }, stdout: "pipe", stderr: "pipe" });
  const help = run(["--help"]);
  expect(help.exitCode).toBe(0);
  expect(help.stdout.toString()).toContain("healthcheck");
  expect(help.stdout.toString()).toContain("reset-admin-password");
  expect(help.stdout.toString()).toContain("demo-server");
  expect(run(["version"]).stdout.toString().trim()).toMatch(/^\d+\.\d+\.\d+/);
  const unknown = run(["--frobnicate"]);
  expect(unknown.exitCode).toBe(2);
  expect(unknown.stderr.toString()).toContain("--frobnicate");
  const bad = run([], { RUNTIME__DRIVER: "mesos", DATABASE__PATH: join(work, "never.db") });
  expect(bad.exitCode).toBe(2);
  expect(bad.stderr.toString().trim().split("\n")).toEqual([
    'connector-service: configuration error: RUNTIME__DRIVER: must be local or kubernetes (got "mesos")',
  ]);
});

test("serves from another directory, keeps data across a restart, and stops gracefully", async () => {
  const upstream = startBearerServer("persisted-secret");
  // First start: no admin password set, so one is generated and logged once.
  const first = await start();
  const generated = first.lines.map((l) => JSON.parse(l)).find((l) => l.generated)?.generated;
  expect(generated).toBeString();
  const admin: Api = apiClient(first.url, { username: "admin", password: generated });

  expect(Bun.spawnSync([BINARY, "healthcheck", first.url], { cwd: work }).exitCode).toBe(0);
  const docs = await fetch(`${first.url}/docs`);
  expect(docs.status).toBe(200);
  expect(await docs.text()).toContain("/docs/assets/swagger-ui-bundle.js");
  expect((await fetch(`${first.url}/docs/assets/swagger-ui-bundle.js`)).status).toBe(200);

  expect((await admin("POST", "/api/v1/users", { body: { username: "alice", password: "alice-password" } })).status).toBe(201);
  const alice = apiClient(first.url, { username: "alice", password: "alice-password" });
  const connector = (await alice("POST", "/api/v1/connectors", { body: { url: upstream.url, metadata: { name: "Bearer" } } }))
    .body;
  const connected = await alice("POST", `/api/v1/connectors/${connector.id}/connect`, {
    body: { headers: { Authorization: "Bearer persisted-secret" } },
  });
  expect(connected.body.state).toBe("connected");
  expect(await stop(first)).toBe(0);
  expect(first.lines.at(-1)).toContain('"msg":"stopped"');
  expect(Bun.spawnSync([BINARY, "healthcheck", first.url], { cwd: work }).exitCode).toBe(1);

  const migrate = Bun.spawnSync([BINARY, "migrate"], {
    cwd: work,
    env: { PATH: process.env.PATH!, DATABASE__PATH: join(dataDir, "cs.db") },
  });
  expect(JSON.parse(migrate.stdout.toString()).migrations_applied).toBe(0);

  const second = await start();
  expect(second.lines.join("\n")).not.toContain("generated password");
  expect(second.lines.map((l) => JSON.parse(l)).find((l) => l.msg === "database ready").migrations_applied).toBe(0);
  const again = apiClient(second.url, { username: "alice", password: "alice-password" });
  const got = await again("GET", `/api/v1/connectors/${connector.id}`);
  expect(got.body).toMatchObject({
    id: connector.id,
    state: "connected",
    header_names: ["Authorization"],
    metadata: { name: "Bearer" },
  });

  // The sealed headers still work after the restart: a tool call through the proxy reaches the upstream with them.
  const { client, close } = await mcpClient(`${second.url}/api/v1/connectors/${connector.id}/mcp`, {
    username: "alice",
    password: "alice-password",
  });
  const result = await client.callTool({ name: "whoami", arguments: { name: "after-restart" } });
  expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toMatchObject({
    name: "after-restart",
    authorization: "Bearer persisted-secret",
  });
  await close();
  // Its audit record was written (by the binary's database thread, an entry point of its own) and is listed.
  const records = (await again("GET", `/api/v1/audit?connector_id=${connector.id}&method=tools/call`)).body.items;
  expect(records).toMatchObject([{ name: "whoami", outcome: "result", http_status: 200 }]);
  expect(await stop(second)).toBe(0);
  await upstream.stop();
});

test("a start that cannot listen says so in one line, exit 1, and generates no administrator password", async () => {
  const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
  const data = join(work, "port-taken");
  try {
    const failed = Bun.spawnSync([BINARY], {
      cwd: work,
      env: { PATH: process.env.PATH!, DATABASE__PATH: join(data, "cs.db"), SERVER__PORT: String(taken.port) },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(failed.exitCode).toBe(1);
    expect(failed.stderr.toString().trim().split("\n")).toEqual([
      `connector-service: could not start: 127.0.0.1:${taken.port} is already in use: stop what listens there, or set SERVER__PORT to another port`,
    ]);
    expect(failed.stdout.toString()).not.toContain("generated");
  } finally {
    taken.stop(true);
  }
  // The next start, on a free port, creates the administrator and shows its password (it was never made before).
  const next = await start({ DATABASE__PATH: join(data, "cs.db") });
  expect(next.lines.map((l) => JSON.parse(l)).find((l) => l.generated)?.generated).toBeString();
  expect(await stop(next)).toBe(0);
});

test("the demo preset runs the binary itself (demo-server), in the sandbox, with nothing else installed", async () => {
  // A copy of the binary in the working directory that holds its data, as someone who downloaded it would run it:
  // the sandbox masks that directory whole (and /tmp is private), so only the binary is let back in.
  const program = join(work, "connector-service");
  copyFileSync(BINARY, program);
  chmodSync(program, 0o755);
  const service = await startBinary(
    work,
    { DATABASE__PATH: join(work, "demo/cs.db"), AUTH__ADMIN_PASSWORD: "demo-admin-password" },
    program,
  );
  try {
    const admin = apiClient(service.url, { username: "admin", password: "demo-admin-password" });
    const [demo] = (await admin("GET", "/api/v1/connectors/presets")).body.items;
    expect(demo.stdio.command).toEqual([program, "demo-server"]);
    const sandbox = service.lines.map((l) => JSON.parse(l)).find((l) => l.sandbox === "bwrap");
    expect(sandbox.hidden).toContain(work);
    const created = await admin("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://demo" } });
    const connected = await admin("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {} });
    expect(connected.body.state).toBe("connected");
    const { client, close } = await mcpClient(`${service.url}/api/v1/connectors/${created.body.id}/mcp`, {
      username: "admin",
      password: "demo-admin-password",
    });
    const echoed = await client.callTool({ name: "echo", arguments: { text: "from the binary" } });
    expect((echoed.content as { text: string }[])[0]!.text).toBe("from the binary");
    await close();
  } finally {
    expect(await stop(service)).toBe(0);
  }
}, 30_000);
