import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "../peers/ports";
import { approveInForms } from "../support/oauth-client";
import { byHand } from "../support/oauth-by-hand";
import { startTestService, type TestService } from "../support/service";

// The conformance kit's authorization-server scenarios (`conformance authorization`, new in 0.2.0-alpha.12, installed
// beside 0.1.16 as `conformance-next`) against the service as the authorization server of its proxy URLs: the
// metadata document, and a whole code grant with PKCE and `resource`. The kit prints the authorization URL for a
// person; here the person is the sign-in and consent forms submitted over HTTP, and the browser's last step (the
// redirect to the kit's callback on 127.0.0.1) is a GET of the Location the service answered.
const KIT = resolve(import.meta.dir, "../../node_modules/conformance-next/dist/index.js");
const SCENARIOS = ["authorization-server-metadata-endpoint", "authorization-code-grant"];

let service: TestService;
const out = mkdtempSync(join(tmpdir(), "cs-conformance-as-"));
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service.stop();
  rmSync(out, { recursive: true, force: true });
});

type Check = { id: string; status: string; errorMessage?: string };

test("every authorization-server scenario of the conformance kit passes", async () => {
  const alice = (await service.user("alice")).basic;
  const created = await service.api("POST", "/api/v1/connectors", {
    as: alice,
    body: { url: "https://mcp.example/mcp", metadata: { name: "for the kit" } },
  });
  expect(created.status).toBe(201);
  const resource = `${service.url}/api/v1/connectors/${created.body.id}/mcp`;
  const port = await freePort();
  const clientId = await byHand((request) => fetch(request), service.url).register({
    redirect_uris: [`http://127.0.0.1:${port}/callback`],
    client_name: "MCP conformance kit",
  });

  const kit = Bun.spawn(
    [
      process.execPath,
      KIT,
      "authorization",
      "--url",
      service.url,
      "--client-id",
      clientId,
      "--resource",
      resource,
      "--port",
      String(port),
      "-o",
      out,
    ],
    {
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  // The kit prints the URL a person should open, then waits for its callback.
  let printed = "";
  const reader = kit.stdout.getReader();
  let authorizationUrl: string | undefined;
  while (!authorizationUrl) {
    const { value, done } = await reader.read();
    if (done)
      throw new Error(`the kit ended without an authorization URL:\n${printed}\n${await new Response(kit.stderr).text()}`);
    printed += new TextDecoder().decode(value);
    authorizationUrl = printed.split("\n").find((line) => line.startsWith(`${service.url}/oauth/authorize?`));
  }
  const send = (request: Request) => fetch(request, { redirect: "manual" });
  const { location } = await approveInForms(send, authorizationUrl, alice);
  expect(location).toStartWith(`http://127.0.0.1:${port}/callback?`);
  expect((await fetch(location)).status).toBe(200);
  const drain = (async () => {
    for (;;) if ((await reader.read()).done) return;
  })();
  expect(await kit.exited).toBe(0);
  await drain;

  const results = new Map<string, Check[]>();
  for (const entry of readdirSync(out, { recursive: true })
    .map(String)
    .filter((p) => p.endsWith("checks.json"))) {
    const scenario = SCENARIOS.find((s) => entry.includes(s));
    if (scenario) results.set(scenario, JSON.parse(readFileSync(join(out, entry), "utf8")));
  }
  expect([...results.keys()].sort()).toEqual([...SCENARIOS].sort());
  const outcome = Object.fromEntries(
    [...results].map(([scenario, checks]) => [
      scenario,
      checks.map((c) => `${c.id}: ${c.status}${c.errorMessage ? ` (${c.errorMessage})` : ""}`),
    ]),
  );
  expect(outcome).toEqual({
    "authorization-server-metadata-endpoint": [
      "authorization-server-metadata: SUCCESS",
      "authorization-server-metadata-cimd: SUCCESS",
    ],
    "authorization-code-grant": ["authorization-code-grant: SUCCESS"],
  });
}, 60_000);
