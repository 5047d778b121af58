import fc from "fast-check";

/** The JSON Schema subset the service's OpenAPI document uses (TypeBox output). */
export type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  patternProperties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  const?: unknown;
  enum?: unknown[];
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
};

/** Strings a careless or hostile client sends: unicode, control characters, separators, huge, path tricks. */
export const nastyString = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "\r\n",
    "\u2028",
    "🔑",
    "../../etc/passwd",
    "%00",
    "${jndi:x}",
    "'; DROP TABLE users; --",
    "<script>",
    "\\",
  ),
  fc.constantFrom("x".repeat(5_000), "é".repeat(3_000)),
);

/** A value of the schema's shape (valid, as far as the schema says). */
export function fromSchema(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return fc.jsonValue({ maxDepth: 2 });
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => fromSchema(s, depth + 1)));
  switch (schema.type) {
    case "string":
      if (schema.format === "uuid") return fc.uuid();
      if (schema.format === "uri" || schema.format === "url") return fc.webUrl();
      if (schema.pattern)
        return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 10_000));
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) });
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1_000, max: schema.maximum ?? 1_000 });
    case "number":
      return fc.double({ min: schema.minimum ?? -1_000, max: schema.maximum ?? 1_000, noNaN: true });
    case "boolean":
      return fc.boolean();
    case "array":
      return fc.array(fromSchema(schema.items, depth + 1), { maxLength: 4 });
    case "object": {
      if (schema.patternProperties) {
        const [, valueSchema] = Object.entries(schema.patternProperties)[0]!;
        return fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fromSchema(valueSchema, depth + 1), { maxKeys: 4 });
      }
      const required = new Set(schema.required ?? []);
      const entries = Object.entries(schema.properties ?? {});
      return fc.record(Object.fromEntries(entries.map(([name, s]) => [name, fromSchema(s, depth + 1)])), {
        requiredKeys: entries.map(([name]) => name).filter((name) => required.has(name)),
      });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** JSON nested `depth` levels deep: what costs a naive parser or validator quadratic time. */
export const deeplyNested = fc.integer({ min: 20, max: 20_000 }).map((depth) => `${"[".repeat(depth)}${"]".repeat(depth)}`);

/**
 * A request body for an operation: mostly its schema's shape, then bent — a field of the wrong type, a required one
 * missing, an unknown one added, strings made hostile or huge, values nested very deep — or not JSON at all.
 */
export function bodyFor(schema: Schema | undefined): fc.Arbitrary<{ text: string; contentType: string }> {
  const json = (value: fc.Arbitrary<unknown>) =>
    value.map((v) => ({ text: JSON.stringify(v) ?? "null", contentType: "application/json" }));
  const valid = fromSchema(schema);
  const bent = valid.chain((value) => {
    if (!value || typeof value !== "object" || Array.isArray(value)) return fc.constant(value);
    const keys = [...Object.keys(value), ...Object.keys(schema?.properties ?? {})];
    if (!keys.length) return fc.constant(value);
    return fc
      .tuple(fc.constantFrom(...keys), fc.oneof(fc.jsonValue({ maxDepth: 3 }), nastyString, fc.constant(undefined)))
      .map(([key, replacement]) => ({ ...(value as object), [key]: replacement }));
  });
  return fc.oneof(
    { weight: 4, arbitrary: json(valid) },
    { weight: 4, arbitrary: json(bent) },
    { weight: 2, arbitrary: json(fc.jsonValue({ maxDepth: 4 })) },
    {
      weight: 1,
      arbitrary: deeplyNested.map((text) => ({
        text: `{"url":"https://a.example","metadata":{"x":${text}}}`,
        contentType: "application/json",
      })),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom("{", '{"url":', "[1,2", "nul", "\u0000", '{"a":1}}', "{'a':1}")
        .map((text) => ({ text, contentType: "application/json" })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.string({ maxLength: 60 }),
          fc.constantFrom(
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/xml",
            "",
          ),
        )
        .map(([text, contentType]) => ({ text, contentType })),
    },
  );
}

/** What goes in an Authorization header: good credentials, and every way of getting them wrong. */
export function authorizationFor(good: string[]): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...good) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constant(undefined),
        fc.constantFrom(
          "Basic",
          "Basic ",
          "Bearer",
          "Bearer ",
          "Basic !!!",
          "Basic Og==",
          "Bearer cst_",
          "Digest x",
          "basic YWRtaW46",
          "Bearer  cst_x",
        ),
        fc.string({ maxLength: 30 }).map((s) => `Bearer ${s.replace(/[^\x21-\x7e]/g, "")}`),
        fc
          .tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }))
          .map(([u, p]) => `Basic ${btoa(unescape(encodeURIComponent(`${u}:${p}`)))}`),
      ),
    },
  );
}
