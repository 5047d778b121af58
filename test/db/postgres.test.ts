import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { SQL } from "bun";
import { openPostgresStore, POSTGRES_MIGRATIONS } from "../../src/db/postgres";
import { startPostgres, type Postgres } from "../peers/postgres";
import { expectProblem } from "../support/api";
import { createTestApp } from "../support/app";
import { startTestService } from "../support/service";

// The PostgreSQL store itself, on a server of this file's own (it is stopped and started again below).
let pg: Postgres;
beforeAll(async () => {
  pg = await startPostgres();
}, 30_000);
afterAll(() => pg.stop());

test("replicas starting together migrate once, one after another (advisory lock); a later start applies nothing", async () => {
  const url = await pg.createDatabase();
  const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore(url, { maxConnections: 2 })));
  expect(stores.map((s) => s.applied).sort()).toEqual([0, 0, POSTGRES_MIGRATIONS.length]);
  const client = new SQL(url, { max: 1 });
  expect(Number((await client`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`)[0].n)).toBe(POSTGRES_MIGRATIONS.length);
  await client.close();
  await Promise.all(stores.map((s) => s.close()));
  const again = await openPostgresStore(url);
  expect(again.applied).toBe(0);
  await again.close();
});

test("DATABASE__URL without SECRETS__KEY does not start: every replica must seal with the same key", async () => {
  await expect(startTestService({ DATABASE__URL: await pg.createDatabase(), SECRETS__KEY: "" })).rejects.toThrow(
    "SECRETS__KEY: must be set when DATABASE__URL is",
  );
});

describe("the database goes away, and comes back", () => {
  test("requests answer 503 storage-unavailable and /readyz says the database cannot be reached; both recover", async () => {
    // A password in the URL (trust authentication ignores it) must not reach the log.
    const url = (await pg.createDatabase()).replace("postgres@", "postgres:hunter2@");
    const service = await startTestService({ DATABASE__URL: url, SECRETS__KEY: randomBytes(32).toString("base64") });
    try {
      expect(service.logs.join("\n")).not.toContain("hunter2");
      expect(service.logs.join("\n")).toContain("postgres:********@");
      const created = await service.api("POST", "/api/v1/connectors", { body: { url: "https://kept.example/mcp" } });
      expect(created.status).toBe(201);

      await pg.pause();
      const refused = await service.api("GET", "/api/v1/connectors");
      expectProblem(refused, 503);
      expect(refused.body.type).toBe("/problems/storage-unavailable");
      expect(refused.headers.get("retry-after")).toBe("30");
      const ready = await fetch(`${service.url}/readyz`);
      expect(ready.status).toBe(503);
      expect((await ready.json()).detail).toBe("The database cannot be reached");
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      // What is logged names the driver's error, never the query or its parameters.
      expect(service.logs.filter((l) => l.includes("the database refused a request")).join("\n")).not.toContain("params:");

      await pg.resume();
      expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
      const listed = await service.api("GET", "/api/v1/connectors");
      expect(listed.status).toBe(200);
      expect(listed.body.items.map((c: { url: string }) => c.url)).toEqual(["https://kept.example/mcp"]);
    } finally {
      await service.stop();
    }
  }, 30_000);
});

test("managed servers on PostgreSQL need the kubernetes runtime: connect is a 409 naming the setting, and one found connected is disconnected saying so", async () => {
  const presets = JSON.stringify([
    {
      url: "mcp+stdio://everything",
      metadata: { name: "Everything" },
      stdio: { image: "example/everything", command: ["node", "-e", ""] },
    },
  ]);
  const url = await pg.createDatabase();
  // The rule is the deployments' (no socket needed): the service through `app.handle`, on this PostgreSQL database.
  const service = await createTestApp({ store: await openPostgresStore(url), env: { CONNECTOR__PRESETS: presets } });
  try {
    const id = (await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://everything" } })).body.id as string;
    const refused = await service.api("POST", `/api/v1/connectors/${id}/connect`);
    expectProblem(refused, 409);
    expect(refused.body.detail).toContain("RUNTIME__DRIVER=kubernetes");
    // Connected before (a database copied from a single SQLite instance): reconciliation says why it stops.
    const client = new SQL(url, { max: 1 });
    await client`UPDATE connectors SET state = 'connected' WHERE id = ${id}`;
    await client.close();
    await service.runJobs();
    const after = (await service.api("GET", `/api/v1/connectors/${id}`)).body;
    expect(after.state).toBe("disconnected");
    expect(after.disconnect_reason).toContain("RUNTIME__DRIVER=kubernetes");
  } finally {
    await service.close();
  }
});
