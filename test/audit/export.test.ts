import { afterAll, beforeAll, expect, test } from "bun:test";
import { EXPORT_PAGE } from "../../src/audit/service";
import { createAuditRepository } from "../../src/audit/repository";
import { scriptedServer } from "../peers/scripted-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// The audit trail's export (GET /api/v1/audit?format=ndjson|csv), through app.handle: every record the filters
// select, streamed a page at a time, only one's own, and CSV that a spreadsheet opens without running what an attacker
// put in a tool's name.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;
let connector: string;
const FORMULA = '=HYPERLINK("https://evil.example","click")';

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://tools.example", scriptedServer().handler);
  alice = await t.user("alice");
  bob = await t.user("bob");
  connector = await connectedConnector(alice.api, "https://tools.example/mcp");
  // More records than one page of the export: written as the audit writer writes them.
  const repository = createAuditRepository(t.deps.store);
  const rows = Array.from({ length: EXPORT_PAGE * 2 + 7 }, (_, i) => ({
    id: `0190${String(i).padStart(4, "0")}-0000-7000-8000-000000000000`,
    at: Date.UTC(2026, 10, 1) + i,
    user_id: i % 2 === 0 ? alice.principal.id : bob.principal.id,
    credential: "basic",
    connector_id: connector,
    virtual_server_id: null,
    method: "tools/call",
    name: i === 4 ? FORMULA : i % 3 === 0 ? "send_email" : 'search, with "quotes"',
    outcome: i % 5 === 0 ? ("error" as const) : ("result" as const),
    error_code: i % 5 === 0 ? -32602 : null,
    http_status: 200,
    duration_ms: 3,
    request_bytes: 100,
    response_bytes: 200,
    captured: null,
  }));
  for (let i = 0; i < rows.length; i += 100) await repository.insertMany(rows.slice(i, i + 100));
});
afterAll(() => t.close());

const download = (who: typeof alice, query: string) =>
  t.handle(new Request(`${t.publicUrl}/api/v1/audit?${query}`, { headers: { authorization: `Bearer ${who.token}` } }));

test("ndjson: every one of one's records, newest first, across export pages, as a download", async () => {
  const res = await download(alice, "format=ndjson");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="audit-.+\.ndjson"$/);
  const records = (await res.text())
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line));
  expect(records).toHaveLength(EXPORT_PAGE + 4);
  expect(records.every((r) => r.user_id === alice.principal.id)).toBe(true);
  expect(records.map((r) => r.id)).toEqual(
    records
      .map((r) => r.id)
      .sort()
      .reverse(),
  );
  // The same record as the JSON listing shows it.
  const [first] = (await alice.api("GET", "/api/v1/audit?limit=1")).body.items;
  expect(records[0]).toEqual(first);
});

test("the filters of the listing apply, tool and outcome among them; another user's records are not one's to export", async () => {
  const sent = (await (await download(alice, "format=ndjson&name=send_email&outcome=error")).text()).trimEnd().split("\n");
  const records = sent.map((line) => JSON.parse(line));
  expect(records.length).toBeGreaterThan(10);
  expect(records.every((r) => r.name === "send_email" && r.outcome === "error")).toBe(true);
  expect((await download(alice, `format=csv&user_id=${bob.principal.id}`)).status).toBe(404);
  const admin = await t.handle(
    new Request(`${t.publicUrl}/api/v1/audit?format=ndjson&user_id=${bob.principal.id}`, {
      headers: { authorization: `Bearer ${t.admin.token}` },
    }),
  );
  expect((await admin.text()).trimEnd().split("\n")).toHaveLength(EXPORT_PAGE + 3);
});

test("csv: a header line, RFC 4180 quoting, and a formula in a tool's name defused", async () => {
  const res = await download(alice, "format=csv&name=" + encodeURIComponent(FORMULA));
  expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8; header=present");
  const lines = (await res.text()).split("\r\n");
  expect(lines[0]).toBe(
    "id,at,user_id,credential,connector_id,method,name,outcome,error_code,http_status,duration_ms,request_bytes,response_bytes,captured,virtual_server_id",
  );
  expect(lines).toHaveLength(3); // header, the record, and the empty string after the last CRLF
  expect(lines[1]).toContain(`,"'=HYPERLINK(""https://evil.example"",""click"")",`);

  const quoted = (await (await download(alice, "format=csv&outcome=result")).text()).split("\r\n")[1]!;
  expect(quoted).toContain(`,"search, with ""quotes""",result,`);
});

test("an unknown format is a 422 naming the field", async () => {
  const res = await download(alice, "format=xml");
  expect(res.status).toBe(422);
  expect(await res.text()).toContain("format");
});

test("the OpenAPI document says the page is JSON and the downloads NDJSON and CSV", async () => {
  const doc = await (await t.handle(new Request(`${t.publicUrl}/openapi.json`))).json();
  const content = doc.paths["/api/v1/audit"].get.responses["200"].content;
  expect(Object.keys(content).sort()).toEqual(["application/json", "application/x-ndjson", "text/csv"]);
  expect(content["application/json"].schema.properties.items).toBeDefined();
});
