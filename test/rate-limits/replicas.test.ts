import { afterAll, beforeAll, expect, test } from "bun:test";
import { pagedToolsServer } from "../peers/paged-tools";
import { startCluster, type Cluster } from "../support/replicas";

// Three replicas of the compiled binary on one PostgreSQL store behind nginx round-robin: a burst of three times a
// tool's limit, spread over the replicas, lets the limit through (plus what refilled during the burst) within ±10 %.
// Each replica reserves batches from the shared bucket (rate-limits/shared.ts), so this is also what their unused
// reserves cost.
const LIMIT = 120;
const BURST = 3 * LIMIT;
const CONCURRENCY = 12;

let cluster: Cluster;
let upstream: ReturnType<typeof Bun.serve>;
const server = pagedToolsServer(["send_email"]);

beforeAll(async () => {
  upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: server.handler });
  cluster = await startCluster(3);
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  upstream?.stop(true);
});

test("a burst of 3× a tool's limit across three replicas lets the limit through within ±10 %", async () => {
  const created = await cluster.api("POST", "/api/v1/connectors", {
    body: { url: `http://127.0.0.1:${upstream.port}/mcp`, rate_limits: { tools: { send_email: LIMIT } } },
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  expect((await cluster.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} })).body.state).toBe("connected");
  const token = (await cluster.api("POST", "/api/v1/tokens", { body: { name: "burst" } })).body.token as string;

  const call = async (n: number) => {
    const response = await fetch(`${cluster.url}/api/v1/connectors/${id}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: n, method: "tools/call", params: { name: "send_email", arguments: {} } }),
    });
    const body = await response.json();
    if (response.status !== 200) throw new Error(`${response.status}: ${JSON.stringify(body)}`);
    return body.result?.isError === true ? "refused" : "through";
  };

  const started = performance.now();
  let next = 0;
  const outcomes: string[] = [];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < BURST) outcomes.push(await call(next++));
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const through = outcomes.filter((o) => o === "through").length;
  // The bucket refills LIMIT a minute while the burst lasts.
  const expected = LIMIT + (seconds * LIMIT) / 60;
  console.log(
    `rate limit across replicas: ${through} of ${BURST} through in ${seconds.toFixed(2)} s; expected ${expected.toFixed(1)}`,
  );
  expect(outcomes).toHaveLength(BURST);
  expect(through).toBe(server.calls.get("send_email") ?? 0);
  expect(Math.abs(through - expected)).toBeLessThanOrEqual(0.1 * LIMIT);
}, 120_000);
