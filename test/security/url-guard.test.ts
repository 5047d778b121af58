import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { checkAddress } from "../../src/security/addresses";
import { UnsafeUrl } from "../../src/http/fetch";
import { createUrlGuard } from "../../src/security/url-guard";
import { bearerMcp } from "../peers/bearer-server";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { expectProblem } from "../support/api";

describe("address classes", () => {
  test.each([
    "169.254.169.254",
    "169.254.0.1",
    "fe80::1",
    "fd00:ec2::254",
    "::ffff:169.254.169.254",
    "::ffff:a9fe:a9fe",
    "64:ff9b::a9fe:a9fe",
    // Every other IPv6 embedding of the metadata address.
    "::a9fe:a9fe",
    "::169.254.169.254",
    "::ffff:0:a9fe:a9fe",
    "64:ff9b:1::a9fe:a9fe",
    "2002:a9fe:a9fe::1",
    "2001:0:4136:e378:8000:63bf:5601:5601",
    // Other clouds' metadata and platform addresses, and their embeddings.
    "100.100.100.200",
    "::ffff:100.100.100.200",
    "64:ff9b::6464:64c8",
    "192.0.0.192",
    "168.63.129.16",
    "0.0.0.0",
    "224.0.0.1",
    "::",
  ])("%s is always refused", (address) => {
    expect(checkAddress(address, false).allowed).toBe(false);
    expect(checkAddress(address, true).allowed).toBe(false);
  });

  test.each([
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "::1",
    "fd12:3456::1",
    "::ffff:127.0.0.1",
    "100.64.0.1",
    "2002:a00:1::1",
    "64:ff9b::7f00:1",
    "::ffff:0:a00:1",
  ])("%s is refused only when private networks are blocked", (address) => {
    expect(checkAddress(address, false).allowed).toBe(true);
    expect(checkAddress(address, true).allowed).toBe(false);
  });

  test.each(["93.184.216.34", "2606:2800:220:1::1", "172.32.0.1", "8.8.8.8", "2002:5db8:d822::1", "2001:db8::a9fe:a9fe"])(
    "%s is allowed",
    (address) => {
      expect(checkAddress(address, true).allowed).toBe(true);
    },
  );
});

describe("resolution", () => {
  test("a name is checked against every address it resolves to, at every fresh resolution", async () => {
    let answer = ["93.184.216.34"];
    let now = 0;
    const guard = createUrlGuard({ blockPrivate: false, resolve: async () => answer, clock: () => now, cacheMs: 1000 });
    await guard.check(new URL("https://rebinding.example/mcp"));
    // DNS rebinding to the metadata address: refused once the cached resolution expires.
    answer = ["93.184.216.34", "169.254.169.254"];
    now = 2000;
    await expect(guard.check(new URL("https://rebinding.example/mcp"))).rejects.toBeInstanceOf(UnsafeUrl);
  });

  test("metadata host names are refused without resolving", async () => {
    const guard = createUrlGuard({ blockPrivate: false, resolve: async () => ["93.184.216.34"] });
    await expect(guard.check(new URL("http://metadata.google.internal/computeMetadata/v1/"))).rejects.toBeInstanceOf(UnsafeUrl);
  });
});

describe("in the service", () => {
  // A server on a loopback address, reached through the fake network: the guard checks the address, not a socket.
  const upstream = { url: "http://127.0.0.1:4321/mcp" };
  let service: TestApp;
  let strict: TestApp;
  beforeAll(async () => {
    service = await createTestApp();
    strict = await createTestApp({ env: { SECURITY__BLOCK_PRIVATE_NETWORKS: "true" } });
    service.network.serve(upstream.url, bearerMcp("k").handler);
  });
  afterAll(() => {
    service.close();
    strict.close();
  });

  test.each([
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://[::ffff:169.254.169.254]/mcp",
    "http://[::a9fe:a9fe]/mcp",
    "http://100.100.100.200/latest/meta-data/",
    "http://metadata.google.internal/",
    "http://metadata.tencentyun.com/",
  ])("create refuses %s with a 422", async (url) => {
    const res = await service.api("POST", "/api/v1/connectors", { body: { url } });
    expectProblem(res, 422);
    expect(res.body.errors[0].field).toBe("body.url");
  });

  test("loopback is allowed by default and refused with SECURITY__BLOCK_PRIVATE_NETWORKS=true", async () => {
    await connectedConnector(service.api, upstream.url, { Authorization: "Bearer k" });
    expectProblem(await strict.api("POST", "/api/v1/connectors", { body: { url: upstream.url } }), 422);
    expectProblem(await strict.api("POST", "/api/v1/connectors", { body: { url: "http://localhost:1/mcp" } }), 422);
  });

  test("a name that does not resolve fails connect with a 502 and a reason that says so", async () => {
    const created = await strict.api("POST", "/api/v1/connectors", { body: { url: "http://no-such-host.invalid/mcp" } });
    expect(created.status).toBe(201);
    const res = await strict.api("POST", `/api/v1/connectors/${created.body.id}/connect`, {
      body: { headers: { Authorization: "Bearer k" } },
    });
    expectProblem(res, 502);
    const after = await strict.api("GET", `/api/v1/connectors/${created.body.id}`);
    expect(after.body.state).toBe("disconnected");
    expect(after.body.disconnect_reason).toContain("cannot resolve no-such-host.invalid");
  });

  test("a server that redirects to a refused address: 422 saying where it points and why, not a 502", async () => {
    service.network.serve(
      "http://127.0.0.1:4322",
      () => new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/" } }),
    );
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: "http://127.0.0.1:4322/mcp" } });
    const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expectProblem(res, 422);
    expect(res.body.errors[0].field).toBe("url");
    expect(res.body.detail).toContain("redirects (HTTP 302) to http://169.254.169.254/latest/meta-data/, which is refused");
    const after = (await service.api("GET", `/api/v1/connectors/${created.body.id}`)).body;
    expect(after.state).toBe("disconnected");
    expect(after.disconnect_reason).toContain("which is refused");
  });

  test("a redirect elsewhere is a 502 that says where to point the connector", async () => {
    service.network.serve(
      "http://127.0.0.1:4323",
      () => new Response(null, { status: 308, headers: { location: "https://moved.example/mcp" } }),
    );
    const created = await service.api("POST", "/api/v1/connectors", { body: { url: "http://127.0.0.1:4323/mcp" } });
    const res = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`);
    expectProblem(res, 502);
    expect(res.body.detail).toBe(
      "The MCP server answered 308 redirecting to https://moved.example/mcp: use that URL for the connector",
    );
  });
});
