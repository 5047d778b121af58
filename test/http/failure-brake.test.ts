import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitForHttp } from "../peers/ports";
import { NGINX_AVAILABLE } from "../support/replicas";
import { ADMIN, startTestService, type TestService } from "../support/service";

// The brake on password guessing over real sockets: the client's address comes from the connection, or — from a
// proxy in SERVER__TRUSTED_PROXIES — from the X-Forwarded-For it sets (here Debian's nginx, as in the
// replica layout of docs/deployment.md). A client that guessed AUTH__MAX_FAILURES times is refused even with the right password, before any
// password is checked; another address is not.

/** GET /api/v1/users/me at `url` as the administrator with `password`, sent from `localAddress`: the status. */
const meFrom = (url: string, localAddress: string, password: string, headers: Record<string, string> = {}) =>
  new Promise<number>((resolve, reject) => {
    const target = new URL(`${url}/api/v1/users/me`);
    const sent = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        localAddress,
        auth: `${ADMIN.username}:${password}`,
        headers,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode!);
      },
    );
    sent.on("error", reject);
    sent.end();
  });

describe("straight to the service", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ AUTH__MAX_FAILURES: "3" });
  });
  afterAll(() => service.stop());

  test("three wrong passwords from this address, then even the right one is a 429 with Retry-After; another address goes on", async () => {
    const me = (password: string) =>
      fetch(`${service.url}/api/v1/users/me`, { headers: { authorization: `Basic ${btoa(`${ADMIN.username}:${password}`)}` } });
    expect((await me(ADMIN.password)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await me("wrong-password")).status).toBe(401);
    const refused = await me(ADMIN.password);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await refused.json()).detail).toContain("Too many wrong passwords");
    expect(await meFrom(service.url, "127.0.0.2", ADMIN.password)).toBe(200);
    expect(await meFrom(service.url, "127.0.0.1", ADMIN.password)).toBe(429);
  });
});

describe.skipIf(!NGINX_AVAILABLE)("behind nginx, with SERVER__TRUSTED_PROXIES", () => {
  let service: TestService;
  let work: string;
  let nginx: ReturnType<typeof Bun.spawn>;
  let balancer: string;
  beforeAll(async () => {
    service = await startTestService({ AUTH__MAX_FAILURES: "3", SERVER__TRUSTED_PROXIES: "127.0.0.1/32" });
    work = mkdtempSync(join(tmpdir(), "cs-brake-nginx-"));
    const port = await freePort();
    balancer = `http://127.0.0.1:${port}`;
    writeFileSync(
      join(work, "nginx.conf"),
      `worker_processes 1;
pid ${work}/nginx.pid;
error_log ${work}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${work}/body;
  proxy_temp_path ${work}/proxy;
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass ${service.url};
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }
  }
}
`,
    );
    nginx = Bun.spawn(["nginx", "-p", work, "-c", join(work, "nginx.conf"), "-g", "daemon off;"], {
      stdout: "ignore",
      stderr: "pipe",
    });
    await waitForHttp(`${balancer}/healthz`);
  });
  afterAll(async () => {
    nginx?.kill("SIGTERM");
    await nginx?.exited;
    await service?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test("a guesser behind the proxy locks out only its own address, whatever X-Forwarded-For it writes itself", async () => {
    // 127.0.0.2 guesses, and pretends in its own X-Forwarded-For to be someone else each time.
    for (let i = 0; i < 3; i++)
      expect(await meFrom(balancer, "127.0.0.2", `wrong-${i}`, { "x-forwarded-for": `127.0.0.${10 + i}` })).toBe(401);
    expect(await meFrom(balancer, "127.0.0.2", ADMIN.password, { "x-forwarded-for": "127.0.0.3" })).toBe(429);
    // Everyone else behind the same proxy goes on.
    expect(await meFrom(balancer, "127.0.0.3", ADMIN.password)).toBe(200);
    expect(await meFrom(balancer, "127.0.0.1", ADMIN.password)).toBe(200);
  });

  test("from a peer that is not a trusted proxy, X-Forwarded-For is ignored", async () => {
    // Straight to the service from the guesser's address, claiming to be an address that has not guessed.
    expect(await meFrom(service.url, "127.0.0.2", ADMIN.password, { "x-forwarded-for": "127.0.0.4" })).toBe(429);
  });
});
