import { afterAll, beforeAll, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { a2aAgent } from "../peers/a2a-agent";
import { createTestApp, type TestApp } from "../support/app";

type Schema = Record<string, unknown>;
type MediaType = {
  schema?: Schema & { examples?: unknown[] };
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
};
type Operation = {
  tags?: string[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { description?: string }>;
};
type Document = { tags?: { name: string; description?: string }[]; paths: Record<string, Record<string, Operation>> };

let t: TestApp;
let doc: Document;
beforeAll(async () => {
  t = await createTestApp();
  // The agent of the provider example: registering fetches its card.
  t.network.serve("https://agent.example", a2aAgent("https://agent.example").handler);
  doc = await (await t.handle(new Request(`${t.publicUrl}/openapi.json`))).json();
});
afterAll(() => t.close());

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );

/** JSON Schema 2020-12, as OpenAPI 3.1 says; the formats TypeBox writes, checked for real (no ajv-formats here). */
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat("uuid", /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat("uri", { validate: (value: string) => URL.canParse(value) });
ajv.addFormat("date-time", { validate: (value: string) => !Number.isNaN(Date.parse(value)) });
ajv.addFormat("integer", /^-?\d+$/);

/** What Swagger UI puts in the "Try it out" editor: the media type's example, else its first named one. */
function editorExample(media: MediaType): unknown {
  if (media.example !== undefined) return media.example;
  return Object.values(media.examples ?? {})[0]?.value;
}

test("every request body has an example that its own schema accepts, where Swagger UI reads it", () => {
  const bodies = operations().filter(({ operation }) => operation.requestBody);
  expect(bodies.length).toBeGreaterThan(15);
  for (const { path, method, operation } of bodies) {
    for (const [type, media] of Object.entries(operation.requestBody!.content)) {
      const where = `${method} ${path} ${type}`;
      const example = editorExample(media);
      expect({ where, example: example !== undefined }).toEqual({ where, example: true });
      const validate = ajv.compile(media.schema ?? {});
      for (const value of [example, ...(media.schema?.examples ?? [])]) {
        validate(value);
        expect({ where, value, errors: validate.errors ?? null }).toEqual({ where, value, errors: null });
      }
    }
  }
});

test("the API takes each JSON example as it stands: Try it out with the editor untouched is never a 400 or 422", async () => {
  // Relays (MCP, A2A) pass their bodies on unread: their schema is any JSON, checked above.
  const validated = operations().filter(
    ({ path, operation }) =>
      path.startsWith("/api/") && operation.requestBody?.content["application/json"]?.schema?.type === "object",
  );
  expect(validated.map(({ method, path }) => `${method} ${path}`)).toContain("post /api/v1/connectors");
  for (const { path, method, operation } of validated) {
    const example = editorExample(operation.requestBody!.content["application/json"]!);
    // An id no record has: the body is checked before the route looks for it (404 then, not 422).
    const url = path.replace(/\{[^}]+\}/g, "0193f4a2-7c1e-7d3a-9b5e-2f6c8d1a4e07");
    // The examples tell one story: alice, whom the user example creates, changes her own password.
    const as = path === "/api/v1/users/me/password" ? { username: "alice", password: "correct horse battery" } : undefined;
    const res = await t.api(method.toUpperCase(), url, { body: example, ...(as && { as }) });
    if (as) expect(res.status).toBe(200);
    // A virtual server's example names a member connector no user has: the body is taken, and the member refused by
    // name (docs/interface.md §9.1), which is not the editor's example failing its schema.
    const fields = (res.body?.errors ?? []).map((e: { field: string }) => e.field);
    if (res.status === 422 && fields.length > 0 && fields.every((f: string) => /^body\.members\[\d+\]\.connector_id$/.test(f)))
      continue;
    expect({ method, path, status: res.status, refused: [400, 415, 422].includes(res.status) }).toMatchObject({
      method,
      path,
      refused: false,
    });
  }
  // The connector example created one with the URL alone: nothing of the schema's other fields was stored.
  const created = (await t.api("GET", "/api/v1/connectors")).body.items;
  expect(created.map((c: { url: string }) => c.url)).toContain("https://mcp.example.com/mcp");
});

test('no example or default anywhere in the document is Swagger UI\'s placeholder "string"', () => {
  const found: string[] = [];
  const leaves = (value: unknown, at: string): void => {
    if (value === "string") found.push(at);
    else if (Array.isArray(value)) value.forEach((v, i) => leaves(v, `${at}/${i}`));
    else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) leaves(v, `${at}/${k}`);
  };
  // Keywords only: under `properties` the keys are field names (an agent card's skill has a field "examples").
  const walk = (node: unknown, at: string, names = false): void => {
    if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${at}/${i}`));
    if (!node || typeof node !== "object") return;
    for (const [key, value] of Object.entries(node)) {
      if (!names && (key === "example" || key === "examples" || key === "default")) leaves(value, `${at}/${key}`);
      walk(value, `${at}/${key}`, !names && (key === "properties" || key === "patternProperties"));
    }
  };
  walk(doc, "#");
  expect(found).toEqual([]);
  // And the examples are there to find (the walk is not looking at nothing).
  expect(JSON.stringify(doc.paths["/api/v1/connectors"]!.post!.requestBody)).toContain("https://mcp.example.com/mcp");
});

test("every response has a description", () => {
  const missing = operations().flatMap(({ path, method, operation }) =>
    Object.entries(operation.responses)
      .filter(([, response]) => !response.description?.trim())
      .map(([status]) => `${method} ${path} ${status}`),
  );
  expect(missing).toEqual([]);
});

test("sections come in a newcomer's order: connectors first, health last; every tag is listed and described", () => {
  const listed = (doc.tags ?? []).map((tag) => tag.name);
  expect(listed[0]).toBe("Connectors");
  expect(listed.at(-1)).toBe("Health");
  for (const [earlier, later] of [
    ["Connectors", "Presets"],
    ["Presets", "API tokens"],
    ["API tokens", "Agent providers"],
    ["Agent providers", "Users"],
    ["Users", "Health"],
  ])
    expect(listed.indexOf(earlier!)).toBeLessThan(listed.indexOf(later!));
  for (const tag of doc.tags ?? [])
    expect({ tag: tag.name, described: !!tag.description }).toEqual({ tag: tag.name, described: true });
  // Swagger UI shows a listed tag without operations as an empty section, and an unlisted one after all the others.
  const used = new Set(operations().flatMap(({ operation }) => operation.tags ?? []));
  expect([...used].sort()).toEqual([...listed].sort());
  for (const { path, method, operation } of operations())
    expect({ path, method, tags: operation.tags?.length ?? 0 }).toEqual({ path, method, tags: 1 });
  // The document's own order follows the tags too, for readers other than Swagger UI.
  const ranks = operations().map(({ operation }) => listed.indexOf(operation.tags![0]!));
  expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
  expect(operations()[0]).toMatchObject({ path: "/api/v1/connectors", method: "post" });
});
