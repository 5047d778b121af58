import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { Problem } from "../http-errors/model";
import { PROBLEM_CONTENT_TYPE } from "../http-errors/problem";
// Embedded in the binary (`type: "file"`): Swagger UI works with no internet (docs/interface.md §2).
import bundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import css from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import favicon from "swagger-ui-dist/favicon-32x32.png" with { type: "file" };
import { DOCS_CSP, DOCS_CSS, DOCS_HTML, DOCS_JS } from "./page";

const ASSETS = "/docs/assets";
const YEAR = "public, max-age=31536000, immutable";
const SPEC_PATH = "/openapi.json";

/** A route whose body may be left out says so with this in its `detail` (the generator marks every body required). */
export const OPTIONAL_BODY = { "x-optional-body": true } as const;
/**
 * A route that reads its body itself says so with this in its `detail`: the relays (MCP, A2A: the relay streams or
 * reads it under its own limits) and the OAuth endpoints (forms and errors as the OAuth RFCs define them). No 400/415
 * of the API's parser.
 */
export const OWN_BODY = { "x-own-body": true } as const;
/**
 * An endpoint whose errors a protocol defines (OAuth's JSON errors, HTML pages for a person): it reads its own small
 * body under its own cap (400 when over), so none of the problem+json refusals common to API routes are added.
 */
export const PROTOCOL_ERRORS = { "x-own-body": true, "x-protocol-errors": true } as const;
/**
 * An operation's 200 that may also come as other media types than its JSON schema says (a download, a stream): each
 * is added to the 200's content as text, with what it holds.
 */
export const alsoAnswers = (types: Record<string, string>) => ({ "x-also-content": types }) as const;

type Response = {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: { title?: string } }>;
};
type MediaType = { schema?: { examples?: unknown[] }; example?: unknown; examples?: unknown };
type Operation = {
  tags?: string[];
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  security?: unknown[];
  responses?: Record<string, Response>;
  parameters?: { in: string; schema?: Record<string, unknown> & { "x-integer"?: Record<string, number> } }[];
  "x-optional-body"?: boolean;
  "x-own-body"?: boolean;
  "x-protocol-errors"?: boolean;
  "x-also-content"?: Record<string, string>;
};
type Document = { paths?: Record<string, Record<string, Operation>> };

/**
 * The sections of Swagger UI, in the order a newcomer needs them (Swagger UI shows tags in the order of this list):
 * add and connect a connector and use its proxy URL first; the service's own housekeeping last. Every tag a route
 * names is listed here (test/docs/examples.test.ts).
 */
export const TAGS = [
  {
    name: "Connectors",
    description:
      "Start here: add an MCP server by its URL, connect it (OAuth in a browser, or headers), then point any MCP client at its proxy URL",
  },
  { name: "MCP proxy", description: "A connector's proxy URL: MCP Streamable HTTP with the connector's stored credentials" },
  { name: "Virtual servers", description: "One MCP URL over a chosen set of your connectors, their tools under prefixes" },
  { name: "Connector events", description: "Your connectors' changes of state as they happen (Server-Sent Events)" },
  { name: "Presets", description: "The catalog of known MCP servers a connector can start from" },
  { name: "OAuth", description: "Where an MCP server's sign-in comes back to finish a connector's authorization" },
  { name: "API tokens", description: "Bearer tokens for programs and agents, each shown once" },
  { name: "Grants", description: "The MCP clients you allowed through this service's own OAuth, and ending their access" },
  { name: "Agent providers", description: "A2A agents registered by their card" },
  { name: "A2A", description: "Registered agents' cards and the A2A JSON-RPC relay" },
  { name: "Users", description: "Users of the service and their passwords" },
  { name: "Console session", description: "The web console's sign-in (cookie and CSRF token)" },
  {
    name: "Authorization server",
    description: "This service's OAuth for MCP clients that know only a proxy URL (metadata, registration, sign-in, tokens)",
  },
  { name: "Audit", description: "The audit trail of proxied MCP requests" },
  { name: "Health", description: "Liveness, readiness and Prometheus metrics" },
];
const TAG_RANK = new Map(TAGS.map(({ name }, rank) => [name, rank]));
const rankOf = (item: Record<string, Operation>) =>
  Math.min(
    TAGS.length,
    ...Object.values(item).flatMap((operation) => (operation.tags ?? []).map((tag) => TAG_RANK.get(tag) ?? TAGS.length)),
  );

const RETRY_AFTER = { "retry-after": { description: "Seconds to wait before trying again", schema: { type: "integer" } } };
/** The refusals every route of a kind can give, said once here rather than on every route. */
const COMMON = {
  authenticated: {
    429: {
      description:
        "Too many wrong passwords for this user name from this address, or from this address at all (AUTH__MAX_FAILURES, AUTH__MAX_FAILURES_PER_ADDRESS in AUTH__FAILURE_WINDOW_SECONDS; tokens and sessions are never refused for it), or on the MCP proxy too many open streams (PROXY__MAX_STREAMS_PER_USER, PROXY__MAX_STREAMS_PER_CONNECTOR)",
      headers: RETRY_AFTER,
    },
    503: { description: "The store cannot take writes now (disk full, I/O error): nothing was changed", headers: RETRY_AFTER },
  },
  body: { 413: { description: "The body is over API__MAX_BODY_BYTES (relays: PROXY__MAX_BODY_BYTES)" } },
  parsedBody: {
    400: { description: "The body is not valid JSON" },
    415: { description: "The body is not JSON" },
  },
} satisfies Record<string, Record<number, Response>>;

/**
 * Finishes the generated document, once (the generator caches the document it returns, so this sees it again): marks optional bodies, adds
 * the refusals common to every route of a kind, and types every problem response as problem+json
 * ([RFC 9457 §3](https://www.rfc-editor.org/rfc/rfc9457#section-3)), which is what the service sends. A body's
 * example is kept on its `t` schema (`examples`, JSON Schema's keyword) and copied to the media type's `example`, which
 * Swagger UI puts in the "Try it out" editor (else it writes "string" in every field, which gets stored). Paths come in
 * the order of their tags.
 */
const finished = new WeakSet<object>();
function finishDocument(document: Document) {
  if (finished.has(document)) return;
  finished.add(document);
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      const responses = (operation.responses ??= {});
      const add = (common: Record<number, Response>) => {
        for (const [status, response] of Object.entries(common))
          responses[status] ??= { ...response, content: { "application/json": { schema: Problem } } };
      };
      if (operation.security?.length) add(COMMON.authenticated);
      if (operation.requestBody && !operation["x-protocol-errors"]) {
        add(COMMON.body);
        if (!operation["x-own-body"]) add(COMMON.parsedBody);
      }
      if (operation["x-optional-body"] && operation.requestBody) operation.requestBody.required = false;
      for (const media of Object.values(operation.requestBody?.content ?? {})) {
        const [example] = media.schema?.examples ?? [];
        if (example !== undefined && media.example === undefined && media.examples === undefined) media.example = example;
      }
      const also = operation["x-also-content"];
      if (also && responses["200"])
        for (const [type, description] of Object.entries(also))
          (responses["200"].content ??= {})[type] = { schema: { type: "string", description } as { title?: string } };
      delete operation["x-also-content"];
      delete operation["x-optional-body"];
      delete operation["x-own-body"];
      delete operation["x-protocol-errors"];
      for (const response of Object.values(responses)) {
        const json = response.content?.["application/json"];
        if (json && json.schema?.title === Problem.title) response.content = { [PROBLEM_CONTENT_TYPE]: json };
        // A page of HTML (a string schema that says so) is text/html, not the generator's text/plain.
        const text = response.content?.["text/plain"];
        if (text && (text.schema as { contentMediaType?: string } | undefined)?.contentMediaType === "text/html")
          response.content = { "text/html": text };
      }
      // A query parameter checked as a string of digits is shown as the integer it means.
      for (const parameter of operation.parameters ?? []) {
        const integer = parameter.schema?.["x-integer"];
        if (integer)
          parameter.schema = {
            type: "integer",
            ...integer,
            ...(parameter.schema!.description !== undefined && { description: parameter.schema!.description }),
          };
      }
    }
  }
  if (document.paths)
    document.paths = Object.fromEntries(Object.entries(document.paths).sort(([, a], [, b]) => rankOf(a) - rankOf(b)));
}

/** What every answer of /docs carries: its policy, and no guessing of types from content. */
const SECURITY_HEADERS = {
  "content-security-policy": DOCS_CSP,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

export function docsPlugin(version: string) {
  const asset = (path: string, type: string) => () =>
    new Response(Bun.file(path), { headers: { "content-type": type, "cache-control": YEAR, ...SECURITY_HEADERS } });
  const text =
    (body: string, type: string, cache = YEAR) =>
    () =>
      new Response(body, { headers: { "content-type": type, "cache-control": cache, ...SECURITY_HEADERS } });
  return (
    new Elysia({ name: "docs" })
      .onAfterHandle({ as: "global" }, ({ path, response, set }) => {
        if (path !== SPEC_PATH) return;
        set.headers["x-content-type-options"] = "nosniff";
        if (response && typeof response === "object") finishDocument(response as Document);
      })
      .use(
        openapi({
          path: "/docs",
          specPath: SPEC_PATH,
          // The page is docs/page.ts's: the plugin's would start Swagger UI from an inline script.
          provider: null,
          openapiVersion: "3.1.0",
          // staticFile: false, or every path with a dot (the agent card's .well-known one) would be left out.
          exclude: { paths: [/^\/docs/, SPEC_PATH], staticFile: false },
          documentation: {
            tags: TAGS,
            info: {
              title: "connector-service",
              version,
              description:
                "Stores MCP server URLs, authorizes to them (OAuth 2.1 or headers), keeps their credentials sealed and proxies MCP Streamable HTTP; runs stdio MCP servers; serves A2A agent cards. Authenticate with HTTP Basic or a Bearer API token.",
            },
            components: {
              securitySchemes: {
                basic: { type: "http", scheme: "basic" },
                bearer: { type: "http", scheme: "bearer", description: "An API token from POST /api/v1/tokens" },
              },
            },
          },
        }),
      )
      // Revalidated, not cached for a year: a new binary's page must not be mixed with an old one's assets.
      .get("/docs", text(DOCS_HTML, "text/html; charset=utf-8", "no-cache"), { detail: { hide: true } })
      .get(`${ASSETS}/docs.js`, text(DOCS_JS, "text/javascript; charset=utf-8", "no-cache"), { detail: { hide: true } })
      .get(`${ASSETS}/docs.css`, text(DOCS_CSS, "text/css; charset=utf-8", "no-cache"), { detail: { hide: true } })
      .get(`${ASSETS}/swagger-ui-bundle.js`, asset(bundle, "text/javascript; charset=utf-8"), { detail: { hide: true } })
      .get(`${ASSETS}/swagger-ui.css`, asset(css, "text/css; charset=utf-8"), { detail: { hide: true } })
      .get("/favicon.ico", asset(favicon, "image/png"), { detail: { hide: true } })
  );
}
