import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { authHeader } from "../support/api";
import { mcpClient, proxyUrl, toolText } from "../support/mcp";
import { ADMIN, startTestService, type TestService } from "../support/service";

const ROOT = resolve(import.meta.dir, "../..");

/**
 * The first connector a newcomer makes: the built-in demo preset, deployed by the local driver in its sandbox, with
 * the data inside the working directory as `npm start` has it (so the sandbox masks the checkout the program runs
 * from), and a tool call through the proxy URL with the SDK's Streamable HTTP client.
 */
describe("the mcp+stdio://demo preset", () => {
  let service: TestService;
  let data: string;
  beforeAll(async () => {
    data = mkdtempSync(join(ROOT, ".test-data-"));
    service = await startTestService({ DATABASE__PATH: join(data, "cs.db"), SECRETS__KEY: "" });
  });
  afterAll(async () => {
    await service.stop();
    rmSync(data, { recursive: true, force: true });
  });

  test("is first in the catalog, runs this executable, and says it needs nothing", async () => {
    const [first] = (await service.api("GET", "/api/v1/connectors/presets")).body.items;
    expect(first.url).toBe("mcp+stdio://demo");
    expect(first.metadata.name).toBe("Demo server — works offline, no sign-in");
    // The running executable (bun and this checkout's entry here), never `connector-service` looked up on PATH.
    expect(first.stdio.command).toEqual([process.execPath, join(ROOT, "src/index.ts"), "demo-server"]);
  });

  test("create, connect (sandboxed), and call echo through the proxy URL", async () => {
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://demo" } });
    expect(created.status).toBe(201);
    expect(created.body.preset).toBe("mcp+stdio://demo");
    expect(created.body.metadata.name).toContain("Demo server");
    const connected = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {} });
    expect(connected.status).toBe(200);
    expect(connected.body.state).toBe("connected");
    // The sandbox hid the checkout the service runs from (it holds the data), yet the demo server started.
    const sandbox = service.logs.map((line) => JSON.parse(line)).find((line) => line.sandbox === "bwrap");
    expect(sandbox.hidden).toContain(ROOT);

    const { client, close } = await mcpClient(proxyUrl(service, created.body.id));
    try {
      expect(client.getServerVersion()?.name).toBe("connector-service-demo");
      expect(toolText(await client.callTool({ name: "echo", arguments: { text: "through the proxy" } }))).toBe(
        "through the proxy",
      );
      expect((await client.callTool({ name: "add", arguments: { a: 1, b: 2 } })).structuredContent).toEqual({ sum: 3 });
    } finally {
      await close();
    }
    expect((await service.api("DELETE", `/api/v1/connectors/${created.body.id}`)).status).toBe(204);
  }, 30_000);

  test("progress and elicitation reach an MCP client through the proxy", async () => {
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://demo" } });
    await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: {} });
    const client = new Client({ name: "demo-tests", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, (request) => ({
      action: "accept",
      content: { answer: `an answer to "${request.params.message}"` },
    }));
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxyUrl(service, created.body.id)), {
        requestInit: { headers: { authorization: authHeader(ADMIN) } },
      }),
    );
    try {
      const progress: number[] = [];
      const counted = await client.callTool({ name: "countdown", arguments: { seconds: 2 } }, CallToolResultSchema, {
        onprogress: (p) => progress.push(p.progress),
      });
      expect(toolText(counted)).toBe("Counted down 2 s.");
      expect(progress).toEqual([0, 1]);
      const asked = await client.callTool({ name: "ask", arguments: { question: "Ready?" } });
      expect(toolText(asked)).toBe('You answered: an answer to "Ready?"');
    } finally {
      await client.close();
    }
    expect((await service.api("DELETE", `/api/v1/connectors/${created.body.id}`)).status).toBe(204);
  }, 30_000);
});
