import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Peer } from "../peers/everything";
import { startProxiedEverything } from "../support/mcp";
import { ADMIN, type TestService } from "../support/service";
import { runSuite, SCENARIOS } from "../support/conformance";

// The conformance kit's server suite against a virtual server whose one member is server-everything with prefix "":
// every check ends as it does against server-everything directly (issue 24 "Done when"), except these, each for the
// reason given. The set is asserted exactly: a difference that appears or goes away fails the test.
const KNOWN: Record<string, string> = {
  // The kit calls tools of its own test server. server-everything answers an unknown tool with an isError result,
  // which the kit counts as a success; the virtual server answers -32602 (MCP 2025-11-25 server/tools "Error
  // Handling": an unknown tool is a protocol error), the same for a hidden tool (issue 24 item 4).
  "tools-call-simple-text": "an unknown tool is -32602",
  "tools-call-error": "an unknown tool is -32602",
  // The virtual server answers a request that asks for no progress with application/json (basic/transports lets the
  // server choose); the kit notes JSON answers as INFO where server-everything's event streams are a SUCCESS.
  "server-sse-multiple-streams": "JSON answers: INFO, not SUCCESS",
  // Not routed yet.
  // Subscriptions go to the member whose listing has the URI; the kit's (test://watched-resource) is in none —
  // server-everything takes any — so it is -32602 `Unknown resource`, as an unknown tool is.
  "resources-subscribe": "the kit's URI is in no member's listing: -32602",
  "resources-unsubscribe": "the kit's URI is in no member's listing: -32602",
};
let upstream: Peer;
let service: TestService;
let id: string;
let stop: () => Promise<void>;
const out = mkdtempSync(join(tmpdir(), "cs-vs-conformance-"));

beforeAll(async () => {
  ({ upstream, service, id, stop } = await startProxiedEverything());
});
afterAll(async () => {
  await stop();
  if (!process.env.KEEP_CONFORMANCE) rmSync(out, { recursive: true, force: true });
});

test("every conformance check ends the same through a virtual server of one member as against the server directly", async () => {
  const created = await service.api("POST", "/api/v1/virtual-servers", {
    body: { name: "everything", members: [{ connector_id: id, prefix: "" }] },
  });
  expect(created.status).toBe(201);
  const direct = await runSuite(upstream.url, join(out, "direct"));
  // Bun's fetch (which runs the kit) sends URL credentials as HTTP Basic.
  const url = created.body.mcp_url.replace("http://", `http://${ADMIN.username}:${ADMIN.password}@`);
  const virtual = await runSuite(url, join(out, "virtual"));

  expect([...virtual.keys()].sort()).toEqual([...SCENARIOS].sort());
  const differing = SCENARIOS.filter((s) => !Bun.deepEquals(virtual.get(s), direct.get(s))).map((s) => ({
    scenario: s,
    direct: direct.get(s),
    virtual: virtual.get(s),
  }));
  expect(differing.map((d) => d.scenario).sort(), JSON.stringify(differing, null, 1)).toEqual(Object.keys(KNOWN).sort());
  // The run is not vacuous: the scenarios server-everything can pass (the others want the kit's own test server's
  // tools and prompts) pass through the virtual server.
  const passing = SCENARIOS.filter((s) => virtual.get(s)!.every((c) => c.status === "SUCCESS"));
  expect(passing).toEqual(expect.arrayContaining(["server-initialize", "ping", "tools-list", "resources-list", "prompts-list"]));
}, 180_000);
