import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearerMcp } from "../peers/bearer-server";
import { expectProblem, readResponse } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";

// What a page of another site can make a browser send with credentials the browser holds by itself (a cached Basic
// credential): none of it changes anything (src/http/cross-site.ts). Programs, and the service's own pages, go on.
let t: TestApp;
let basic: string;
const EVIL = "https://evil.example";

beforeAll(async () => {
  t = await createTestApp();
  t.network.serve("https://mcp.example", bearerMcp("k").handler);
  basic = `Basic ${Buffer.from(`${t.admin.basic.username}:${t.admin.basic.password}`).toString("base64")}`;
});
afterAll(() => t.close());

/** A request as a browser sends it for a page: its Fetch Metadata, its Origin, and the cached Basic credential. */
function browserRequest(
  method: string,
  path: string,
  options: { site?: string; origin?: string | null; type?: string; body?: string; authorization?: string } = {},
) {
  const headers: Record<string, string> = {
    authorization: options.authorization ?? basic,
    "sec-fetch-mode": "navigate",
    "sec-fetch-dest": "document",
  };
  if (options.site) headers["sec-fetch-site"] = options.site;
  if (options.origin !== null) headers.origin = options.origin ?? EVIL;
  if (options.type) headers["content-type"] = options.type;
  return t.handle(new Request(`${t.publicUrl}${path}`, { method, headers, body: options.body }));
}

const stateOf = async (id: string) => (await t.api("GET", `/api/v1/connectors/${id}`)).body.state;

describe("a page of another site, with the browser's cached Basic credential", () => {
  test("a form cannot disconnect, reconnect, approve tools, delete or create: 403 naming the origin; nothing changes", async () => {
    const id = await connectedConnector(t.api, "https://mcp.example/mcp", { Authorization: "Bearer k" });
    const form = { site: "cross-site", type: "application/x-www-form-urlencoded", body: "" };
    for (const [method, path] of [
      ["POST", `/api/v1/connectors/${id}/disconnect`],
      ["POST", `/api/v1/connectors/${id}/connect`],
      ["POST", `/api/v1/connectors/${id}/tools/approve`],
      ["POST", "/api/v1/connectors"],
      ["POST", "/api/v1/tokens"],
      ["DELETE", `/api/v1/connectors/${id}`],
    ] as const) {
      const res = await readResponse(await browserRequest(method, path, form));
      expectProblem(res, 403);
      expect(res.body.detail).toContain("A change from a page of https://evil.example is refused");
    }
    expect(await stateOf(id)).toBe("connected");
  });

  test("another port of the same host is another site too (Sec-Fetch-Site: same-site)", async () => {
    const id = await connectedConnector(t.api, "https://mcp.example/mcp", { Authorization: "Bearer k" });
    expectProblem(
      await readResponse(
        await browserRequest("POST", `/api/v1/connectors/${id}/disconnect`, { site: "same-site", origin: "http://cs.test:9999" }),
      ),
      403,
    );
    expect(await stateOf(id)).toBe("connected");
  });

  test("a browser that sends no Fetch Metadata and no Origin: a form's body type is refused (415), body or not", async () => {
    const id = await connectedConnector(t.api, "https://mcp.example/mcp", { Authorization: "Bearer k" });
    for (const type of ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", undefined]) {
      const res = await t.handle(
        new Request(`${t.publicUrl}/api/v1/connectors/${id}/disconnect`, {
          method: "POST",
          headers: { authorization: basic, ...(type && { "content-type": type }) },
          body: type ? "" : undefined,
        }),
      );
      expect(res.status).toBe(415);
    }
    expect(await stateOf(id)).toBe("connected");
  });

  test("the MCP proxy takes no Basic credential from another site; a Bearer token (held by the page itself) still works", async () => {
    const id = await connectedConnector(t.api, "https://mcp.example/mcp", { Authorization: "Bearer k" });
    const call = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const mcp = (authorization: string, type = "application/json") =>
      t.handle(
        new Request(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, {
          method: "POST",
          headers: {
            authorization,
            origin: EVIL,
            "sec-fetch-site": "cross-site",
            "sec-fetch-mode": "cors",
            "content-type": type,
            accept: "application/json, text/event-stream",
          },
          body: call,
        }),
      );
    const refused = await readResponse(await mcp(basic, "text/plain"));
    expectProblem(refused, 403);
    expect(refused.body.detail).toContain("may not use HTTP Basic credentials");
    expect((await mcp(`Bearer ${t.admin.token}`)).status).toBe(200);
  });

  test("the callback's confirmation and the authorization server's forms refuse a post from another site", async () => {
    for (const path of ["/api/v1/connectors/oauth/callback", "/oauth/authorize"]) {
      expectProblem(
        await readResponse(
          await browserRequest("POST", path, {
            site: "cross-site",
            type: "application/x-www-form-urlencoded",
            body: "callback=state%3Dx",
          }),
        ),
        403,
      );
    }
  });
});

describe("what still works", () => {
  test("programs (no Origin, no Fetch Metadata) with the JSON type, body or not", async () => {
    const id = await connectedConnector(t.api, "https://mcp.example/mcp", { Authorization: "Bearer k" });
    expect((await t.api("POST", `/api/v1/connectors/${id}/disconnect`)).status).toBe(200);
  });

  test("the service's own pages (Swagger UI's Try it out, the console): same-origin, with or without a body type", async () => {
    const id = await connectedConnector(t.api, "https://mcp.example/mcp", { Authorization: "Bearer k" });
    const res = await t.handle(
      new Request(`${t.publicUrl}/api/v1/connectors/${id}/disconnect`, {
        method: "POST",
        headers: {
          authorization: basic,
          origin: t.publicUrl,
          "sec-fetch-site": "same-origin",
          "sec-fetch-mode": "cors",
          "sec-fetch-dest": "empty",
        },
      }),
    );
    expect(res.status).toBe(200);
  });

  test("reads are not changes: a cross-site GET is answered (the browser keeps the answer from the other page: no CORS)", async () => {
    const res = await browserRequest("GET", "/api/v1/connectors", { site: "cross-site" });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("no Basic challenge to a browser", () => {
  test("a 401 to a navigation or a page's fetch challenges only for Bearer; a program still gets Basic", async () => {
    const navigate = { "sec-fetch-mode": "navigate", "sec-fetch-dest": "document", "sec-fetch-site": "none" };
    const id = await connectedConnector(t.api, "https://mcp.example/mcp", { Authorization: "Bearer k" });
    for (const path of ["/api/v1/connectors", `/api/v1/connectors/${id}/mcp`, "/api/v1/audit"]) {
      const page = await t.handle(new Request(`${t.publicUrl}${path}`, { headers: navigate }));
      expect(page.status).toBe(401);
      expect(page.headers.get("www-authenticate")).not.toContain("Basic");
      const program = await t.handle(new Request(`${t.publicUrl}${path}`));
      expect(program.status).toBe(401);
      expect(program.headers.get("www-authenticate")).toContain('Basic realm="connector-service"');
    }
  });
});
