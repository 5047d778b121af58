import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app";
import { sql } from "drizzle-orm";
import { queryRows } from "../support/store";

const CUSTOM = [
  {
    url: "https://tools.example.com/mcp",
    client_id: "preset-client",
    client_secret: "preset-secret-value",
    metadata: { name: "Tools", description: "Example tools" },
  },
  {
    url: "mcp+stdio://everything",
    metadata: { name: "Everything", description: "Reference server" },
    stdio: {
      image: "example/everything:1",
      command: ["node"],
      args: ["dist/index.js", "stdio"],
      env: { API_KEY: "env-secret-value" },
      access_token_env_name: "ACCESS_TOKEN",
    },
  },
];

describe("built-in presets", () => {
  let service: TestApp;
  beforeAll(async () => {
    service = await createTestApp();
  });
  afterAll(() => service.close());

  test("lists the demo server first, then Stripe, Box and GitHub, with names and descriptions", async () => {
    const res = await service.api("GET", "/api/v1/connectors/presets");
    expect(res.status).toBe(200);
    expect(res.body.items.map((p: { url: string }) => p.url)).toEqual([
      "mcp+stdio://demo",
      "https://mcp.stripe.com",
      "https://mcp.box.com",
      "https://api.githubcopilot.com/mcp",
    ]);
    for (const p of res.body.items) {
      expect(p.metadata.name.length).toBeGreaterThan(0);
      expect(p.metadata.description.length).toBeGreaterThan(10);
    }
  });

  test.each([
    ["https://mcp.stripe.com", "https://mcp.stripe.com"],
    ["HTTPS://MCP.Stripe.COM/", "https://mcp.stripe.com"],
    ["https://mcp.stripe.com:443", "https://mcp.stripe.com"],
    ["https://api.githubcopilot.com/mcp/", "https://api.githubcopilot.com/mcp"],
  ])("%p matches %p after normalisation", async (url, preset) => {
    const res = await service.api("POST", "/api/v1/connectors", { body: { url } });
    expect(res.status).toBe(201);
    expect(res.body.preset).toBe(preset);
    expect(res.body.metadata.name).toBeString();
  });

  test.each([
    "https://mcp.stripe.com:8443",
    "http://mcp.stripe.com",
    "https://api.githubcopilot.com/mcp/x",
    "https://api.githubcopilot.com/MCP",
  ])("%p matches nothing", async (url) => {
    const res = await service.api("POST", "/api/v1/connectors", { body: { url } });
    expect(res.status).toBe(201);
    expect(res.body.preset).toBeNull();
    expect(res.body.metadata).toEqual({});
  });
});

describe("CONNECTOR__PRESETS", () => {
  let service: TestApp;
  beforeAll(async () => {
    service = await createTestApp({ env: { CONNECTOR__PRESETS: JSON.stringify(CUSTOM) } });
  });
  afterAll(() => service.close());

  const connectorRow = async (id: string) =>
    (
      await queryRows<{ client_id: string | null; client_secret: string | null }>(
        service.deps,
        sql`SELECT client_id, client_secret FROM connectors WHERE id = ${id}`,
      )
    )[0];
  const secretOf = (id: string, sealed: string) => service.deps.sealer.open(sealed, `connectors/${id}/client_secret`);

  test("replaces the built-in list, and the listing shows no client secret or env value", async () => {
    const res = await service.api("GET", "/api/v1/connectors/presets");
    expect(res.body.items.map((p: { url: string }) => p.url)).toEqual(CUSTOM.map((p) => p.url));
    expect(res.text).not.toContain("preset-secret-value");
    expect(res.text).not.toContain("env-secret-value");
    expect(res.body.items[1].stdio).toEqual({
      image: "example/everything:1",
      command: ["node"],
      args: ["dist/index.js", "stdio"],
      env_names: ["API_KEY"],
      access_token_env_name: "ACCESS_TOKEN",
    });
  });

  test("applies preset credentials and metadata when the request has none", async () => {
    const res = await service.api("POST", "/api/v1/connectors", { body: { url: "https://tools.example.com/mcp/" } });
    expect(res.body).toMatchObject({ preset: "https://tools.example.com/mcp", metadata: CUSTOM[0]!.metadata });
    const row = (await connectorRow(res.body.id))!;
    expect(row.client_id).toBe("preset-client");
    expect(secretOf(res.body.id, row.client_secret!)).toBe("preset-secret-value");
  });

  test("keeps the caller's client credentials and metadata when given", async () => {
    const res = await service.api("POST", "/api/v1/connectors", {
      body: { url: "https://tools.example.com/mcp", client_id: "mine", metadata: { name: "Mine" } },
    });
    expect(res.body).toMatchObject({ preset: "https://tools.example.com/mcp", metadata: { name: "Mine" } });
    const row = (await connectorRow(res.body.id))!;
    expect(row.client_id).toBe("mine");
    // The preset's secret belongs to the preset's client id: it is not paired with the caller's.
    expect(row.client_secret).toBeNull();
  });

  test("fills metadata from the preset but keeps the caller's credentials", async () => {
    const res = await service.api("POST", "/api/v1/connectors", {
      body: { url: "https://tools.example.com/mcp", client_id: "mine", client_secret: "my-secret" },
    });
    expect(res.body.metadata).toEqual(CUSTOM[0]!.metadata);
    const row = (await connectorRow(res.body.id))!;
    expect(row.client_id).toBe("mine");
    expect(secretOf(res.body.id, row.client_secret!)).toBe("my-secret");
  });

  test("match_preset: false applies nothing", async () => {
    const res = await service.api("POST", "/api/v1/connectors", {
      body: { url: "https://tools.example.com/mcp", match_preset: false },
    });
    expect(res.body).toMatchObject({ preset: null, metadata: {} });
    expect(await connectorRow(res.body.id)).toEqual({ client_id: null, client_secret: null });
  });

  test("an mcp+stdio URL is accepted only through its stdio preset", async () => {
    const ok = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://everything" } });
    expect(ok.status).toBe(201);
    expect(ok.body.preset).toBe("mcp+stdio://everything");
    const off = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://everything", match_preset: false } });
    expect(off.status).toBe(422);
  });
});
