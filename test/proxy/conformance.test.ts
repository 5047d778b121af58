import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Peer } from "../peers/everything";
import { proxyUrl, startProxiedEverything } from "../support/mcp";
import { ADMIN, type TestService } from "../support/service";
import { runSuite, SCENARIOS } from "../support/conformance";

let upstream: Peer;
let service: TestService;
let id: string;
let stop: () => Promise<void>;
const out = mkdtempSync(join(tmpdir(), "cs-conformance-"));

beforeAll(async () => {
  ({ upstream, service, id, stop } = await startProxiedEverything());
});
afterAll(async () => {
  await stop();
  rmSync(out, { recursive: true, force: true });
});

test("every conformance check ends the same through the proxy as against the server directly", async () => {
  const direct = await runSuite(upstream.url, join(out, "direct"));
  // Bun's fetch (which runs the kit) sends URL credentials as HTTP Basic: the proxy's authentication.
  const credentialed = proxyUrl(service, id).replace("http://", `http://${ADMIN.username}:${ADMIN.password}@`);
  const proxied = await runSuite(credentialed, join(out, "proxied"));

  expect([...direct.keys()].sort()).toEqual([...SCENARIOS].sort());
  expect([...proxied.keys()].sort()).toEqual([...SCENARIOS].sort());
  for (const scenario of SCENARIOS) {
    expect({ scenario, checks: proxied.get(scenario) }).toEqual({ scenario, checks: direct.get(scenario) });
  }
  // The run is not vacuous: the basics pass in both.
  for (const scenario of ["server-initialize", "tools-list", "tools-call-simple-text", "server-sse-multiple-streams"]) {
    expect(proxied.get(scenario)!.every((c) => c.status === "SUCCESS")).toBe(true);
  }
}, 120_000);
