import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
// Embedded in the binary (`type: "file"`): Swagger UI works with no internet (DESIGN.md).
import bundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import css from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import favicon from "swagger-ui-dist/favicon-32x32.png" with { type: "file" };

const ASSETS = "/docs/assets";
const YEAR = "public, max-age=31536000, immutable";
const SPEC_PATH = "/openapi.json";

/** A route whose body may be left out says so with this in its `detail` (the generator marks every body required). */
export const OPTIONAL_BODY = { "x-optional-body": true } as const;

type Operation = { requestBody?: { required?: boolean }; "x-optional-body"?: boolean };

/** Marks the optional bodies of the generated document (once: the generator caches the document it returns). */
function markOptionalBodies(document: { paths?: Record<string, Record<string, Operation>> }) {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      if (!operation["x-optional-body"]) continue;
      delete operation["x-optional-body"];
      if (operation.requestBody) operation.requestBody.required = false;
    }
  }
}

export function docsPlugin(version: string) {
  const asset = (path: string, type: string) => () =>
    new Response(Bun.file(path), { headers: { "content-type": type, "cache-control": YEAR } });
  return new Elysia({ name: "docs" })
    .onAfterHandle({ as: "global" }, ({ path, response }) => {
      if (path === SPEC_PATH && response && typeof response === "object") markOptionalBodies(response);
    })
    .use(
      openapi({
        path: "/docs",
        specPath: SPEC_PATH,
        provider: "swagger-ui",
        openapiVersion: "3.1.0",
        // staticFile: false, or every path with a dot (the agent card's .well-known one) would be left out.
        exclude: { paths: [/^\/docs/, SPEC_PATH], staticFile: false },
        documentation: {
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
        swagger: {
          cdn: `${ASSETS}/swagger-ui-bundle.js`,
          theme: `${ASSETS}/swagger-ui.css`,
          // The default validator badge loads an image from an outside host.
          validatorUrl: "none",
          persistAuthorization: false,
        } as never,
      }),
    )
    .get(`${ASSETS}/swagger-ui-bundle.js`, asset(bundle, "text/javascript; charset=utf-8"), { detail: { hide: true } })
    .get(`${ASSETS}/swagger-ui.css`, asset(css, "text/css; charset=utf-8"), { detail: { hide: true } })
    .get("/favicon.ico", asset(favicon, "image/png"), { detail: { hide: true } });
}
