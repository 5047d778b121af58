import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { ConfigError, describeConfig, loadConfig, loadSetting, settingNames } from "../../src/config/load";

const error = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  throw new Error("expected a ConfigError");
};

describe("defaults", () => {
  test("need no environment at all", () => {
    const config = loadConfig({});
    expect(config.server).toMatchObject({ host: "127.0.0.1", port: 8000, publicUrl: undefined });
    expect(config.database.path).toEndWith("/data/connector-service.db");
    expect(config.secrets.keyFile).toEndWith("/data/secret.key");
    expect(config.runtime).toEqual({ driver: "local", sandbox: undefined, maxProcessesPerUser: 8, maxProcesses: 32 });
    expect(config.presets.map((p) => p.url)).toEqual([
      "mcp+stdio://demo",
      "https://mcp.stripe.com",
      "https://mcp.box.com",
      "https://api.githubcopilot.com/mcp",
    ]);
  });
});

describe("a bad value names the variable", () => {
  test.each([
    ["SERVER__PORT", "abc", "SERVER__PORT: must be an integer from 0 to 65535"],
    ["SERVER__PORT", "70000", "SERVER__PORT"],
    ["RUNTIME__DRIVER", "nomad", "RUNTIME__DRIVER: must be local or kubernetes"],
    ["LOG__LEVEL", "loud", "LOG__LEVEL"],
    ["SECURITY__BLOCK_PRIVATE_NETWORKS", "maybe", "SECURITY__BLOCK_PRIVATE_NETWORKS: must be true or false"],
    ["SERVER__PUBLIC_URL", "ftp://x", "SERVER__PUBLIC_URL"],
    ["SECRETS__KEY", "c2hvcnQ=", "SECRETS__KEY: must be the base64 encoding of exactly 32 bytes"],
    ["OAUTH__ALLOWED_REDIRECT_ORIGINS", "https://a.example/path", "OAUTH__ALLOWED_REDIRECT_ORIGINS"],
    ["SERVER__PROT", "8000", "SERVER__PROT: unknown setting"],
    ["RUNTIME__DRIVER", "kubernetes", "KUBERNETES__GATEWAY_IMAGE: must be set when RUNTIME__DRIVER=kubernetes"],
    ["KUBERNETES__SERVICE_ACCESS", "tunnel", "KUBERNETES__SERVICE_ACCESS: must be dns or proxy"],
    ["RUNTIME__SANDBOX", "firejail", "RUNTIME__SANDBOX: must be bwrap or none"],
    ["RUNTIME__MAX_PROCESSES_PER_USER", "0", "RUNTIME__MAX_PROCESSES_PER_USER: must be an integer from 1 to 100000"],
    ["API__MAX_BODY_BYTES", "12", "API__MAX_BODY_BYTES: must be an integer of at least 1024"],
  ])("%s=%p is refused with %p", (name, value, message) => {
    expect(error({ [name]: value })).toContain(message);
  });
});

describe("the demo preset", () => {
  test("locally, runs the executable running now (bun and this checkout's entry, from source)", () => {
    const [demo] = loadConfig({}).presets;
    expect(demo!.stdio!.command).toEqual([process.execPath, resolve(import.meta.dir, "../../src/index.ts"), "demo-server"]);
  });

  test("CONNECTOR__PRESETS keeps it by its URL alone (its command is this executable, which no setting can spell)", () => {
    const builtin = loadConfig({}).presets[0]!;
    const presets = loadConfig({
      CONNECTOR__PRESETS: JSON.stringify([{ url: "https://one.example/mcp" }, { url: "mcp+stdio://demo" }]),
    }).presets;
    expect(presets[1]).toEqual(builtin);
    const renamed = loadConfig({ CONNECTOR__PRESETS: '[{"url":"mcp+stdio://demo","metadata":{"name":"Try me"}}]' }).presets;
    expect(renamed).toEqual([{ url: "mcp+stdio://demo", metadata: { name: "Try me" }, stdio: builtin.stdio }]);
    // Another mcp+stdio:// URL still needs its stdio.
    expect(error({ CONNECTOR__PRESETS: '[{"url":"mcp+stdio://other"}]' })).toContain("[0].stdio: required");
  });

  test("on Kubernetes, the service's own image, where connector-service is on PATH", () => {
    const [demo] = loadConfig({ RUNTIME__DRIVER: "kubernetes", KUBERNETES__GATEWAY_IMAGE: "registry.example/cs:1.2" }).presets;
    expect(demo!.stdio).toEqual({ image: "registry.example/cs:1.2", command: ["connector-service", "demo-server"] });
  });
});

describe("CONNECTOR__PRESETS", () => {
  test("replaces the built-ins", () => {
    const config = loadConfig({ CONNECTOR__PRESETS: '[{"url":"https://one.example/mcp","metadata":{"name":"One"}}]' });
    expect(config.presets).toEqual([{ url: "https://one.example/mcp", metadata: { name: "One" } }]);
  });

  test.each([
    ["[", "CONNECTOR__PRESETS: is not valid JSON"],
    ['{"url":"https://a"}', "must be a JSON array"],
    ['[{"url":"https://a.example"},{"url":"ftp://b"}]', "CONNECTOR__PRESETS: [1].url"],
    ['[{"url":"https://a.example","metadata":{"name":3}}]', "[0].metadata.name"],
    ['[{"url":"https://a.example","colour":"red"}]', "[0]"],
    ['[{"url":"mcp+stdio://x"}]', "[0].stdio: required"],
    ['[{"url":"https://a.example","stdio":{"image":"i"}}]', "[0].stdio: only allowed"],
    ['[{"url":"https://a.example"},{"url":"HTTPS://A.example/"}]', "[1].url: same URL as entry [0]"],
  ])("%p is refused with a message naming the bad entry", (value, message) => {
    expect(error({ CONNECTOR__PRESETS: value })).toContain(message);
  });
});

test("the effective configuration masks secrets", () => {
  const env = {
    SECRETS__KEY: Buffer.alloc(32, 7).toString("base64"),
    AUTH__ADMIN_PASSWORD: "hunter2hunter2",
    SERVER__PORT: "9000",
  };
  const described = describeConfig(env, loadConfig(env));
  expect(described).toEqual({ SERVER__PORT: "9000", SECRETS__KEY: "********", AUTH__ADMIN_PASSWORD: "********" });
});

test("every setting is documented in docs/configuration.md", async () => {
  const readme = await Bun.file(new URL("../../docs/configuration.md", import.meta.url)).text();
  expect(settingNames().filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
});

describe("one setting read alone (the gateway sidecar's PROXY__INPUT_TIMEOUT_SECONDS)", () => {
  test("is defaulted and converted as loadConfig does", () => {
    expect(loadSetting({}, "proxy", "input_timeout_seconds")).toBe(300);
    expect(loadSetting({ PROXY__INPUT_TIMEOUT_SECONDS: "" }, "proxy", "input_timeout_seconds")).toBe(300);
    expect(loadSetting({ PROXY__INPUT_TIMEOUT_SECONDS: "45" }, "proxy", "input_timeout_seconds")).toBe(45);
    expect(loadConfig({ PROXY__INPUT_TIMEOUT_SECONDS: "45" }).proxy.inputTimeoutMs).toBe(45_000);
  });

  test("a bad value is refused in the words loadConfig uses", () => {
    for (const value of ["soon", "0", "3601"]) {
      const env = { PROXY__INPUT_TIMEOUT_SECONDS: value };
      expect(() => loadSetting(env, "proxy", "input_timeout_seconds")).toThrow(error(env));
    }
  });
});
