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
    "0.0.0.0",
    "224.0.0.1",
    "::",
  ])("%s is always refused", (address) => {
    expect(checkAddress(address, false).allowed).toBe(false);
    expect(checkAddress(address, true).allowed).toBe(false);
  });

  test.each(["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "::1", "fd12:3456::1", "::ffff:127.0.0.1", "100.64.0.1"])(
    "%s is refused only when private networks are blocked",
    (address) => {
      expect(checkAddress(address, false).allowed).toBe(true);
      expect(checkAddress(address, true).allowed).toBe(false);
    },
  );

  test.each(["93.184.216.34", "2606:2800:220:1::1", "172.32.0.1", "8.8.8.8"])("%s is allowed", (address) => {
    expect(checkAddress(address, true).allowed).toBe(true);
  });
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

  test.each(["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://[::ffff:169.254.169.254]/mcp", "http://metadata.google.internal/"])(
    "create refuses %s with a 422",
    async (url) => {
      const res = await service.api("POST", "/api/v1/connectors", { body: { url } });
      expectProblem(res, 422);
      expect(res.body.errors[0].field).toBe("body.url");
    },
  );

  test("loopback is allowed by default and refused with SECURITY__BLOCK_PRIVATE_NETWORKS=true", async () => {
    await connectedConnector(service.api, upstream.url, { Authorization: "Bearer k" });
    expectProblem(await strict.api("POST", "/api/v1/connectors", { body: { url: upstream.url } }), 422);
    expectProblem(await strict.api("POST", "/api/v1/connectors", { body: { url: "http://localhost:1/mcp" } }), 422);
  });

  test("a name that does not resolve fails connect with a 502 and a reason that says so", async () => {
    const created = await strict.api("POST", "/api/v1/connectors", { body: { url: "http://no-such-host.invalid/mcp" } });
    expect(created.status).toBe(201);
    const res = await strict.api("POST", `/api/v1/connectors/${created.body.id}/connect`, { body: { headers: { Authorization: "Bearer k" } } });
    expectProblem(res, 502);
    const after = await strict.api("GET", `/api/v1/connectors/${created.body.id}`);
    expect(after.body.state).toBe("disconnected");
    expect(after.body.disconnect_reason).toContain("cannot resolve no-such-host.invalid");
  });
});
