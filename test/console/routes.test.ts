import { describe, expect, test } from "bun:test";
import { CONSOLE_CSP } from "../../src/console/routes";
import { createTestApp } from "../support/app";

// The console's files as the service serves them (through app.handle): what the page may load, from where, and how.
const t = await createTestApp();
const get = (path: string, headers: Record<string, string> = {}) => t.handle(new Request(`http://localhost${path}`, { headers }));

const SECURITY_HEADERS = {
  "content-security-policy": CONSOLE_CSP,
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

/** Every file the page loads: what index.html names, then what each script imports (parsed, so a syntax error fails here too). */
async function crawl(): Promise<Map<string, { type: string; body: string }>> {
  const files = new Map<string, { type: string; body: string }>();
  const queue = ["/"];
  const transpiler = new Bun.Transpiler({ loader: "js" });
  while (queue.length) {
    const path = queue.shift()!;
    if (files.has(path)) continue;
    const res = await get(path);
    expect(res.status, path).toBe(200);
    const body = await res.text();
    const type = res.headers.get("content-type") ?? "";
    files.set(path, { type, body });
    if (path === "/") {
      for (const [, ref] of body.matchAll(/\b(?:src|href)="([^"#]+)"/g)) if (ref!.startsWith("/console/")) queue.push(ref!);
    } else if (type.startsWith("text/javascript")) {
      for (const { path: imported } of transpiler.scanImports(body))
        queue.push(new URL(imported, `http://localhost${path}`).pathname);
    }
  }
  return files;
}
const files = await crawl();

describe("the web console's files", () => {
  test("/ is the console's page, with a strict content security policy and no framing, referrer or sniffing", async () => {
    const res = await get("/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(res.headers.get(name), name).toBe(value);
    expect(CONSOLE_CSP).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    const html = await res.text();
    expect(html).toStartWith("<!doctype html>");
    expect(html).toContain('<html lang="en">');
    expect(html).toContain('name="viewport"');
  });

  test("the page loads its script, modules, style and icon from /console/, each with its own content type and the same headers", () => {
    const types = Object.fromEntries([...files].map(([path, { type }]) => [path, type]));
    expect(types).toEqual({
      "/": "text/html; charset=utf-8",
      "/console/icon.svg": "image/svg+xml",
      "/console/app.css": "text/css; charset=utf-8",
      "/console/app.js": "text/javascript; charset=utf-8",
      "/console/api.js": "text/javascript; charset=utf-8",
      "/console/account.js": "text/javascript; charset=utf-8",
      "/console/agents.js": "text/javascript; charset=utf-8",
      "/console/connectors.js": "text/javascript; charset=utf-8",
      "/console/mcp.js": "text/javascript; charset=utf-8",
      "/console/tryit.js": "text/javascript; charset=utf-8",
      "/console/tools.js": "text/javascript; charset=utf-8",
      "/console/tool-diff.js": "text/javascript; charset=utf-8",
      "/console/clients.js": "text/javascript; charset=utf-8",
      "/console/dom.js": "text/javascript; charset=utf-8",
      "/console/tokens.js": "text/javascript; charset=utf-8",
      "/console/virtual-servers.js": "text/javascript; charset=utf-8",
      "/console/audit.js": "text/javascript; charset=utf-8",
      "/console/users.js": "text/javascript; charset=utf-8",
    });
  });

  test("every file carries the security headers, an ETag and no-cache; If-None-Match gets a 304 without a body", async () => {
    const etags = new Set<string>();
    for (const path of files.keys()) {
      const res = await get(path);
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(res.headers.get(name), `${path} ${name}`).toBe(value);
      expect(res.headers.get("cache-control"), path).toBe("no-cache");
      const etag = res.headers.get("etag")!;
      etags.add(etag);
      expect(etag, path).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);
      const again = await get(path, { "if-none-match": `W/${etag}, "other"` });
      expect(again.status, path).toBe(304);
      expect(await again.text()).toBe("");
      expect(again.headers.get("etag")).toBe(etag);
      expect((await get(path, { "if-none-match": '"stale"' })).status, path).toBe(200);
    }
    // Each file has a tag of its own.
    expect(etags.size).toBe(files.size);
  });

  test("no file names an outside URL: no CDN, font or image from elsewhere (only the SVG namespace and example placeholders the page shows)", () => {
    // Text the page shows as an example in an empty field (never fetched), and the SVG namespace (an identifier, never fetched).
    const allowed = new Set([
      "http://www.w3.org/2000/svg",
      "https://mcp.example.com/mcp",
      "https://agent.example/.well-known/agent-card.json",
    ]);
    for (const [path, { body }] of files) {
      const urls = [...body.matchAll(/\bhttps?:\/\/[^\s"'`)<>]*/gi)].map((m) => m[0]);
      expect(
        urls.filter((u) => !allowed.has(u)),
        path,
      ).toEqual([]);
      // Protocol-relative references, CSS imports and outside fonts.
      expect(body, path).not.toMatch(/["'(=]\s*\/\/[a-z0-9]/i);
      expect(body, path).not.toMatch(/@import|@font-face/i);
    }
    // The examples are placeholders of input fields, nothing else.
    const bodies = [...files.values()].map((f) => f.body).join("\n");
    for (const url of ["https://mcp.example.com/mcp", "https://agent.example/.well-known/agent-card.json"]) {
      expect(bodies.split(url).length - 1).toBe(1);
      expect(bodies).toContain(`placeholder: "${url}"`);
    }
  });

  test("no inline script or style: the one <script> has a src, no element has an event attribute or a style, no script writes HTML", () => {
    const html = files.get("/")!.body;
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    expect(scripts.length).toBe(1);
    expect(scripts[0]![1]).toContain('src="/console/app.js"');
    expect(scripts[0]![1]).toContain('type="module"');
    expect(scripts[0]![2]!.trim()).toBe("");
    expect(html).not.toMatch(/<style\b/i);
    expect(html).not.toMatch(/\sstyle\s*=/i);
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    expect(html).not.toMatch(/javascript:/i);
    for (const [path, { body, type }] of files) {
      if (!type.startsWith("text/javascript")) continue;
      // Built with text nodes only: nothing the API returns is parsed as HTML.
      expect(body, path).not.toMatch(
        /innerHTML|outerHTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*["']style|javascript:/,
      );
    }
  });

  test("the console's routes stay out of the OpenAPI document; unknown files are 404 problems; Swagger UI still answers", async () => {
    const spec = await (await get("/openapi.json")).json();
    const paths = Object.keys(spec.paths);
    expect(paths.filter((p) => p === "/" || p.startsWith("/console"))).toEqual([]);
    const missing = await get("/console/nothing.js");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toStartWith("application/problem+json");
    expect((await get("/docs")).status).toBe(200);
  });
});
