import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ADMIN, startTestService, type TestService } from "../support/service";
import { authHeader } from "../support/api";

const ROOT = resolve(import.meta.dir, "../..");
const CONFORMANCE = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const ADAPTER = join(ROOT, "test/conformance/auth-client.ts");
// An https public URL, as behind a TLS-terminating proxy: the service may then use its Client ID Metadata Document.
const PUBLIC_URL = "https://connector-service.test";

/** The kit's `auth` suite (0.1.16): every non-draft, non-extension authorization scenario of MCP 2025-11-25. */
const SCENARIOS = [
  "auth/metadata-default",
  "auth/metadata-var1",
  "auth/metadata-var2",
  "auth/metadata-var3",
  "auth/basic-cimd",
  "auth/scope-from-www-authenticate",
  "auth/scope-from-scopes-supported",
  "auth/scope-omitted-when-undefined",
  "auth/scope-step-up",
  "auth/scope-retry-limit",
  "auth/token-endpoint-auth-basic",
  "auth/token-endpoint-auth-post",
  "auth/token-endpoint-auth-none",
  "auth/pre-registration",
];

/** Run one by one: the 2025-03-26 back-compatibility scenarios (not in the suite) and the draft ones. */
const SINGLE_SCENARIOS = [
  "auth/2025-03-26-oauth-metadata-backcompat",
  "auth/2025-03-26-oauth-endpoint-fallback",
  "auth/resource-mismatch",
  "auth/offline-access-scope",
  "auth/offline-access-not-supported",
];

let service: TestService;
const out = mkdtempSync(join(tmpdir(), "cs-conformance-auth-"));
beforeAll(async () => {
  service = await startTestService({ SERVER__PUBLIC_URL: PUBLIC_URL });
});
afterAll(async () => {
  await service.stop();
  rmSync(out, { recursive: true, force: true });
});

type Check = { id: string; status: string; details?: Record<string, unknown> };

/** Runs the kit with the adapter as its client and reads every scenario's checks.json. */
async function runKit(selection: string[], dir: string): Promise<Map<string, Check[]>> {
  const proc = Bun.spawn(
    [process.execPath, CONFORMANCE, "client", "--command", `${process.execPath} ${ADAPTER}`, ...selection, "-o", dir],
    {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, CS_URL: service.url, CS_PUBLIC_URL: PUBLIC_URL, CS_AUTHORIZATION: authHeader(ADMIN) },
    },
  );
  await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const results = new Map<string, Check[]>();
  for (const entry of readdirSync(join(dir, "auth"))) {
    const scenario = `auth/${entry.replace(/-\d{4}-\d{2}-\d{2}T.*$/, "")}`;
    results.set(scenario, JSON.parse(readFileSync(join(dir, "auth", entry, "checks.json"), "utf8")));
  }
  return results;
}

const failures = (checks: Check[]) => checks.filter((c) => c.status === "FAILURE").map((c) => c.id);

test("the 2025-03-26 back-compatibility and the draft authorization scenarios pass too", async () => {
  for (const scenario of SINGLE_SCENARIOS) {
    const results = await runKit(["--scenario", scenario], join(out, scenario.replace("/", "-")));
    const checks = results.get(scenario)!;
    expect({ scenario, failed: failures(checks) }).toEqual({ scenario, failed: [] });
    expect(checks.filter((c) => c.status === "SUCCESS").length).toBeGreaterThan(0);
  }
}, 180_000);

test("every authorization scenario of the conformance kit passes, driven through the service", async () => {
  const results = await runKit(["--suite", "auth"], join(out, "suite"));
  expect([...results.keys()].sort()).toEqual([...SCENARIOS].sort());
  for (const scenario of SCENARIOS) {
    const checks = results.get(scenario)!;
    expect({ scenario, failed: failures(checks) }).toEqual({ scenario, failed: [] });
    expect(checks.filter((c) => c.status === "SUCCESS").length).toBeGreaterThan(5);
  }
  // basic-cimd: the service's own Client ID Metadata Document URL is the client_id (the kit warns only that it is
  // not the kit's sample URL).
  const cimd = results.get("auth/basic-cimd")!.find((c) => c.id === "cimd-client-id-used")!;
  expect(cimd.details?.actualClientId).toBe(`${PUBLIC_URL}/api/v1/connectors/oauth/client-metadata.json`);
}, 180_000);
