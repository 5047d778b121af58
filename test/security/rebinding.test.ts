import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/**
 * DNS rebinding for real: the service runs in a network namespace of its own (`unshare --net --mount`, root on these
 * machines) with a DNS server that answers a name with a public address to the first query and the cloud metadata
 * address to every later one (test/security/rebinding-world.ts). Before the guard pinned its checked address, the
 * check saw the public address and the connection went to the metadata service.
 */
type Report = {
  connect: { status: number; state?: string; reason?: string };
  proxy: { status: number; text: string };
  hostsSeenByServer: string[];
  proxyAfterReresolve: { status: number; text: string };
  cimd: { status: number; page: string; documentRequests: { host: string | null; path: string }[] };
  metadata: { http: string[]; tlsConnections: number };
  dnsQueries: Record<string, number>;
  error?: string;
};

let report: Report;

beforeAll(async () => {
  // A certificate for the TLS name, trusted by the world's process (Bun reads NODE_EXTRA_CA_CERTS at start).
  const dir = mkdtempSync(join(tmpdir(), "rebinding-cert-"));
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  const made = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=cimd.test",
      "-addext",
      "subjectAltName=DNS:cimd.test",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    { stderr: "pipe" },
  );
  if (made.exitCode !== 0) throw new Error(`openssl: ${made.stderr.toString()}`);
  const world = Bun.spawn(
    ["unshare", "--net", "--mount", "--fork", "--", process.execPath, resolve(import.meta.dir, "rebinding-world.ts")],
    {
      cwd: resolve(import.meta.dir, "../.."),
      env: { ...process.env, NODE_EXTRA_CA_CERTS: cert, REBINDING_CERT: cert, REBINDING_KEY: key },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const timer = setTimeout(() => world.kill("SIGKILL"), 60_000);
  const [out, err, code] = await Promise.all([
    new Response(world.stdout).text(),
    new Response(world.stderr).text(),
    world.exited,
  ]);
  clearTimeout(timer);
  const last = out.trim().split("\n").at(-1) ?? "";
  if (code !== 0 || !last.startsWith("{"))
    throw new Error(
      `the rebinding world failed (exit ${code}; this test needs root for unshare): ${err.slice(-2000)} ${out.slice(-1000)}`,
    );
  report = JSON.parse(last);
  if (report.error) throw new Error(`the rebinding world: ${report.error}`);
}, 90_000);

describe("a name that answers a public address first and the metadata address after", () => {
  test("no request and no TLS connection ever reaches the metadata address", () => {
    expect(report.metadata).toEqual({ http: [], tlsConnections: 0 });
    // The attack was really on: the names were asked for more than once.
    expect(report.dnsQueries["rebind.test"]).toBeGreaterThanOrEqual(2);
  });

  test("connect and the proxy reach the address that was checked, naming the host in Host", () => {
    expect(report.connect).toMatchObject({ status: 200, state: "connected" });
    expect(report.proxy.status).toBe(200);
    expect(report.proxy.text).toContain("whoami");
    expect(report.hostsSeenByServer).toEqual(["rebind.test"]);
  });

  test("once the resolution is stale, the next one is checked again: the metadata answer is refused with a 502 saying why", () => {
    expect(report.proxyAfterReresolve.status).toBe(502);
    expect(report.proxyAfterReresolve.text).toContain(
      "rebind.test resolves to 169.254.169.254 is a link-local, metadata or reserved address",
    );
  });

  test("a Client ID Metadata Document is fetched over TLS from the checked address, its certificate verified for the name", () => {
    expect(report.cimd.documentRequests).toEqual([{ host: "cimd.test", path: "/client.json" }]);
    expect(report.cimd.status).toBeLessThan(500);
    expect(report.cimd.page).toContain("Rebinding test client");
  });
});
