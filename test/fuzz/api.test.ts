import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { readResponse, type ApiResponse } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { scriptedServer } from "../peers/scripted-server";
import { authorizationFor, bodyFor, nastyString, type Schema } from "./arbitraries";
import { sql } from "drizzle-orm";
import { queryRows } from "../support/store";

/**
 * Property-based tests generated from the service's own OpenAPI document: every operation, with bodies of its schema's
 * shape and bent out of it, hostile strings, bad ids and query values, every kind of bad credential. Whatever comes
 * in: never a 5xx of the service's own, every refusal an RFC 9457 problem document, and afterwards the stored data is
 * exactly what the accepted requests made. A seeded short run here; a long one with FUZZ_RUNS (docs/development.md "Layout").
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);

type Operation = { method: string; path: string; parameters: { name: string; in: string; schema: Schema }[]; body?: Schema };

let t: TestApp;
let operations: Operation[];
const ids = { connectors: [] as string[], providers: [] as string[], tokens: [] as string[] };
let credentials: string[];

beforeAll(async () => {
  // The brake on failed authentications would soon answer every request 429; it has its own test.
  t = await createTestApp({ env: { AUTH__MAX_FAILURES: "100000" } });
  t.network.serve("https://fuzz-mcp.example", scriptedServer().handler);
  const alice = await t.user("alice");
  credentials = [`Bearer ${t.admin.token}`, `Bearer ${alice.token}`, `Basic ${btoa(`alice:${alice.basic.password}`)}`];
  ids.connectors.push(await connectedConnector(t.api, "https://fuzz-mcp.example/mcp"));
  ids.connectors.push((await alice.api("POST", "/api/v1/connectors", { body: { url: "https://fuzz-mcp.example/mcp" } })).body.id);
  const card = {
    name: "Fuzz",
    description: "d",
    url: "https://agent.example/a2a",
    version: "1",
    capabilities: {},
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
  };
  ids.providers.push((await t.api("POST", "/api/v1/providers", { body: { agent_card: card } })).body.id);
  ids.tokens.push((await t.api("GET", "/api/v1/tokens")).body.items[0].id);
  const doc = await (await t.handle(new Request(`${t.publicUrl}/openapi.json`))).json();
  operations = Object.entries<Record<string, any>>(doc.paths).flatMap(([path, item]) =>
    Object.entries<any>(item).map(([method, op]) => ({
      method: method.toUpperCase(),
      path: path.replace(/\/$/, ""),
      parameters: op.parameters ?? [],
      body: op.requestBody?.content?.["application/json"]?.schema,
    })),
  );
});
afterAll(() => t.close());

/** Ids to put in a path: ones that exist (the caller's or another user's), unknown ones, and garbage. */
const pathId = (name: string) =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        ...(name === "provider_id" ? ids.providers : [...ids.connectors, ...ids.tokens, ...ids.providers]),
      ),
    },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: nastyString },
  );

const requestArbitrary = () =>
  fc.constantFrom(...operations).chain((op) =>
    fc.record({
      op: fc.constant(op),
      path: fc.tuple(...op.parameters.filter((p) => p.in === "path").map((p) => pathId(p.name).map((v) => [p.name, v] as const))),
      query: fc.array(
        fc.tuple(
          fc.constantFrom(...op.parameters.filter((p) => p.in === "query").map((p) => p.name), "unexpected"),
          fc.oneof(fc.stringMatching(/^[0-9]{1,3}$/), nastyString),
        ),
        { maxLength: 3 },
      ),
      authorization: authorizationFor(credentials),
      body: op.method === "GET" || op.method === "DELETE" ? fc.constant(undefined) : bodyFor(op.body),
    }),
  );

/** What the service may answer with a 5xx: an upstream's failure (never its own), or an upstream's answer relayed. */
function acceptable5xx(op: Operation, res: ApiResponse): boolean {
  const problem = (res.headers.get("content-type") ?? "").startsWith("application/problem+json");
  if (!problem) return /\/mcp$|\/a2a\//.test(op.path); // relayed as the MCP server or agent sent it
  return [502, 504].includes(res.status) && /^\/problems\/(upstream-|oauth-)/.test(res.body?.type ?? "");
}

test("whatever the request, never a 5xx of the service's own, and every refusal is a problem document", async () => {
  const made = { connectors: new Set<string>(), providers: new Set<string>(), users: new Set<string>() };
  const gone = { connectors: new Set<string>(), providers: new Set<string>() };
  let sent = 0;
  await fc.assert(
    fc.asyncProperty(requestArbitrary(), async ({ op, path, query, authorization, body }) => {
      let url = op.path;
      for (const [name, value] of path) url = url.replace(`{${name}}`, encodeURIComponent(value));
      const search = new URLSearchParams(query).toString();
      const headers: Record<string, string> = {};
      if (authorization !== undefined) headers.authorization = authorization;
      if (body?.contentType) headers["content-type"] = body.contentType;
      if (url.endsWith("/mcp")) headers.accept = "application/json, text/event-stream";
      const response = await t.handle(
        new Request(`${t.publicUrl}${url}${search ? `?${search}` : ""}`, { method: op.method, headers, body: body?.text }),
      );
      // An event stream (the proxy's GET) stays open: its headers are the answer.
      const stream = response.headers.get("content-type")?.startsWith("text/event-stream");
      if (stream) await response.body?.cancel();
      const res = stream
        ? { status: response.status, headers: response.headers, body: undefined, text: "" }
        : await readResponse(response);
      sent++;
      if (res.status >= 500)
        expect({
          op: `${op.method} ${op.path}`,
          status: res.status,
          body: res.text.slice(0, 300),
          acceptable: acceptable5xx(op, res),
        }).toMatchObject({ acceptable: true });
      const html = op.path.endsWith("/oauth/callback") || op.path === "/docs" || op.path === "/oauth/authorize";
      // The authorization server's endpoints answer as the OAuth RFCs say: JSON errors (RFC 6749 §5.2, RFC 7591 §3.2.2).
      if (res.status >= 400 && /^\/oauth\/(token|revoke|register)$/.test(op.path)) {
        expect({ op: `${op.method} ${op.path}`, type: res.headers.get("content-type"), error: typeof res.body?.error }).toEqual({
          op: `${op.method} ${op.path}`,
          type: "application/json",
          error: "string",
        });
        return;
      }
      const relayed =
        /\/mcp$|\/a2a\//.test(op.path) &&
        !(res.headers.get("content-type") ?? "").startsWith("application/problem+json") &&
        res.headers.get("x-request-id") === null;
      if (res.status >= 400 && !html && !relayed && !(res.status >= 400 && /\/mcp$/.test(op.path) && res.body?.jsonrpc)) {
        expect({
          op: `${op.method} ${op.path}`,
          status: res.status,
          type: res.headers.get("content-type"),
          body: res.text.slice(0, 200),
        }).toMatchObject({ type: expect.stringMatching(/^application\/problem\+json/) });
        expect(res.body.status).toBe(res.status);
      }
      // The model of what the accepted requests made.
      if (op.method === "POST" && res.status === 201 && res.body?.id) {
        if (op.path === "/api/v1/connectors") made.connectors.add(res.body.id);
        if (op.path === "/api/v1/providers") made.providers.add(res.body.id);
        if (op.path === "/api/v1/users") made.users.add(res.body.username);
      }
      if (op.method === "DELETE" && res.status === 204) {
        const id = decodeURIComponent(url.split("/").at(-1)!);
        if (op.path === "/api/v1/connectors/{id}") gone.connectors.add(id);
        if (op.path === "/api/v1/providers/{id}") gone.providers.add(id);
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  expect(sent).toBe(RUNS);

  // Afterwards the database holds exactly what the accepted requests made: nothing half-written, nothing lost.
  const rows = async (query: string) => new Set((await queryRows<{ id: string }>(t.deps, sql.raw(query))).map((r) => r.id));
  const expected = (initial: string[], added: Set<string>, removed: Set<string>) =>
    new Set([...initial, ...added].filter((id) => !removed.has(id)));
  expect(await rows("SELECT id FROM connectors")).toEqual(expected(ids.connectors, made.connectors, gone.connectors));
  expect(await rows("SELECT id FROM providers")).toEqual(expected(ids.providers, made.providers, gone.providers));
  expect(await rows("SELECT username AS id FROM users")).toEqual(new Set(["admin", "alice", ...made.users]));
}, 120_000);
