import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app";

// The virtual server operations in the OpenAPI document: each there, with its request body's schema and examples.
let t: TestApp;
let doc: any;
beforeAll(async () => {
  t = await createTestApp();
  doc = await (await t.handle(new Request(`${t.publicUrl}/openapi.json`))).json();
});
afterAll(() => t.close());

test("every operation is documented, bodies by the schemas that validate them", () => {
  const list = doc.paths["/api/v1/virtual-servers"];
  const one = doc.paths["/api/v1/virtual-servers/{id}"];
  expect(Object.keys(list).sort()).toEqual(["get", "post"]);
  expect(Object.keys(one).sort()).toEqual(["delete", "get", "patch"]);
  for (const op of [list.get, list.post, one.get, one.patch, one.delete]) {
    expect(typeof op.summary).toBe("string");
    expect(op.tags).toEqual(["Virtual servers"]);
    expect(op.responses["401"]).toBeDefined();
  }
  expect(Object.keys(list.post.responses)).toContain("201");
  expect(Object.keys(one.delete.responses)).toContain("204");
  const create = list.post.requestBody.content["application/json"].schema;
  expect(create).toMatchObject({
    type: "object",
    required: ["name", "members"],
    additionalProperties: false,
    properties: {
      name: { type: "string", maxLength: 200 },
      members: { type: "array", maxItems: 50 },
      failure_mode: { type: "string", enum: ["open", "closed"] },
      tool_mode: { type: "string", enum: ["all", "search"] },
    },
  });
  expect(create.properties.members.items.properties.prefix.pattern).toBe("^(?:[a-z0-9][a-z0-9-]{0,23})?$");
  const patch = one.patch.requestBody.content["application/json"].schema;
  expect(patch).toMatchObject({ type: "object", additionalProperties: false, minProperties: 1 });
  expect(patch.required ?? []).toEqual([]);
  expect(list.get.parameters.map((p: { name: string }) => p.name).sort()).toEqual(["cursor", "limit"]);
});

test("examples are real values, never a type's name", () => {
  const text = JSON.stringify([doc.paths["/api/v1/virtual-servers"], doc.paths["/api/v1/virtual-servers/{id}"]]);
  const examples = [...text.matchAll(/"examples?":(\[[^\]]*\]|"[^"]*")/g)].map((m) => m[1]!);
  expect(examples.length).toBeGreaterThan(5);
  for (const example of examples) expect(example).not.toMatch(/^\["?string"?\]$|^"string"$/);
  const schemas = JSON.stringify(doc.components?.schemas ?? {}) + text;
  expect(schemas).toContain("Engineering tools");
  expect(schemas).toContain("/api/v1/virtual-servers/");
});
