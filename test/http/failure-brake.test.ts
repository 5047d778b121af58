import { afterAll, beforeAll, expect, test } from "bun:test";
import { request } from "node:http";
import { ADMIN, startTestService, type TestService } from "../support/service";

// The brake on credential guessing over a real socket: the client's address comes from the connection (looked up only
// once some client has failed), so a client that guessed AUTH__MAX_FAILURES times is refused even with the right
// password, before any password is checked — and another address is not.

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ AUTH__MAX_FAILURES: "3" });
});
afterAll(() => service.stop());

const me = (password: string) =>
  fetch(`${service.url}/api/v1/users/me`, { headers: { authorization: `Basic ${btoa(`${ADMIN.username}:${password}`)}` } });

/** The same request from another loopback address (127.0.0.2: a different client to the service). */
const meFrom = (localAddress: string, password: string) =>
  new Promise<number>((resolve, reject) => {
    const url = new URL(`${service.url}/api/v1/users/me`);
    const sent = request({ host: url.hostname, port: url.port, path: url.pathname, localAddress, auth: `${ADMIN.username}:${password}` }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    sent.on("error", reject);
    sent.end();
  });

test("three wrong passwords from this address, then even the right one is a 429 with Retry-After; another address goes on", async () => {
  expect((await me(ADMIN.password)).status).toBe(200);
  for (let i = 0; i < 3; i++) expect((await me("wrong-password")).status).toBe(401);
  const refused = await me(ADMIN.password);
  expect(refused.status).toBe(429);
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  expect((await refused.json()).detail).toContain("Too many failed authentications");
  expect(await meFrom("127.0.0.2", ADMIN.password)).toBe(200);
  expect(await meFrom("127.0.0.1", ADMIN.password)).toBe(429);
});
