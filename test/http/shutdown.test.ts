import { afterAll, beforeAll, expect, test } from "bun:test";
import { startEverything, type Peer } from "../peers/everything";
import { connectedConnector, mcpClient, proxyUrl } from "../support/mcp";
import { startTestService, type TestService } from "../support/service";

let upstream: Peer;
let service: TestService;
beforeAll(async () => {
  upstream = await startEverything();
  service = await startTestService({ SERVER__SHUTDOWN_TIMEOUT_SECONDS: "10" });
});
afterAll(() => upstream.stop());

test("on shutdown the service stops accepting, finishes the request in flight, then closes the database", async () => {
  const id = await connectedConnector(service.api, upstream.url);
  const { client } = await mcpClient(proxyUrl(service, id));
  let inFlight!: () => void;
  const started = new Promise<void>((resolve) => (inFlight = resolve));
  const call = client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } }, undefined, {
    timeout: 20_000,
    onprogress: () => inFlight(),
  });
  await started; // the first progress notification: the request is being served
  const stopped = service.stop();
  // No new connections once stopping has begun.
  await expect(fetch(`${service.url}/healthz`)).rejects.toThrow();
  const result = await call;
  expect(JSON.stringify(result)).toContain("Long running operation completed");
  await stopped;
  expect(service.logs.at(-1)).toContain('"msg":"stopped"');
  // The database is closed.
  await expect(service.deps.store.ping()).rejects.toThrow();
}, 30_000);
