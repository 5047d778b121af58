/**
 * A small world for test/security/rebinding.test.ts, run inside `unshare --net --mount --fork` (a network namespace
 * of its own, so nothing here touches the machine's network): a "public" address and the cloud metadata address on
 * its loopback interface, a DNS server that answers a name with the public address to the first query and the metadata
 * address to every later one, an MCP server and a TLS server on the public address, a recording server on the metadata
 * address, and the service. It runs the attacks and prints what everyone saw as one JSON line; the test judges.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bearerMcp } from "../peers/bearer-server";
import { startPlannedDns, type Plan } from "../peers/rebinding-dns";
import { startTestService } from "../support/service";

export const PUBLIC = "93.184.216.34";
export const METADATA = "169.254.169.254";

function run(...command: string[]): void {
  const result = Bun.spawnSync(command, { stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${command.join(" ")}: ${result.stderr.toString()}`);
}

// The namespace's network: loopback up, the two addresses on it, and a resolv.conf of our own (this mount namespace only).
run("ip", "link", "set", "lo", "up");
run("ip", "addr", "add", `${PUBLIC}/32`, "dev", "lo");
run("ip", "addr", "add", `${METADATA}/32`, "dev", "lo");
const scratch = mkdtempSync(join(tmpdir(), "rebinding-"));
writeFileSync(join(scratch, "resolv.conf"), "nameserver 127.0.0.1\noptions attempts:1 timeout:2\n");
run("mount", "--bind", join(scratch, "resolv.conf"), "/etc/resolv.conf");

const rebinding: Plan = (n) => (n === 0 ? PUBLIC : METADATA);
const dns = await startPlannedDns(
  "127.0.0.1",
  53,
  new Map([
    ["rebind.test", rebinding],
    ["cimd.test", rebinding],
  ]),
);

// The metadata service: every HTTP request and every TLS connection it gets is the attack succeeding.
const metadataRequests: string[] = [];
const metadataHttp = Bun.serve({
  hostname: METADATA,
  port: 80,
  fetch: (r) => (metadataRequests.push(`${r.method} ${new URL(r.url).pathname}`), Response.json({ AccessKeyId: "stolen" })),
});
let metadataTls = 0;
const metadataTlsListener = Bun.listen({ hostname: METADATA, port: 443, socket: { open: () => void metadataTls++, data() {} } });

// The public side: an MCP server wanting a bearer token, and a TLS server with a client metadata document.
const mcp = bearerMcp("k");
const publicMcp = Bun.serve({ hostname: PUBLIC, port: 80, fetch: mcp.handler });
const documentRequests: { host: string | null; path: string }[] = [];
const REDIRECT_URI = "https://app.example/callback";
const publicTls = Bun.serve({
  hostname: PUBLIC,
  port: 443,
  tls: { cert: readFileSync(process.env.REBINDING_CERT!, "utf8"), key: readFileSync(process.env.REBINDING_KEY!, "utf8") },
  fetch(request) {
    documentRequests.push({ host: request.headers.get("host"), path: new URL(request.url).pathname });
    return Response.json({
      client_id: "https://cimd.test/client.json",
      client_name: "Rebinding test client",
      redirect_uris: [REDIRECT_URI],
    });
  },
});

let skewMs = 0;
const service = await startTestService({}, { clock: () => Date.now() + skewMs });
const admin = { authorization: `Basic ${Buffer.from("admin:admin-password-for-tests").toString("base64")}` };
const report: Record<string, unknown> = {};
try {
  // 1. A user's connector at a rebinding name: connect, then proxy a tool call, then again once the resolution is stale.
  const created = await service.api("POST", "/api/v1/connectors", { body: { url: "http://rebind.test/mcp" } });
  const connected = await service.api("POST", `/api/v1/connectors/${created.body.id}/connect`, {
    body: { headers: { Authorization: "Bearer k" } },
  });
  report.connect = {
    status: connected.status,
    state: connected.body?.state,
    reason: connected.body?.disconnect_reason ?? connected.body?.detail,
  };
  const proxyUrl = `${service.url}/api/v1/connectors/${created.body.id}/mcp`;
  const call = async () => {
    const response = await fetch(proxyUrl, {
      method: "POST",
      headers: {
        ...admin,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: {} } }),
    });
    return { status: response.status, text: await response.text() };
  };
  report.proxy = await call();
  report.hostsSeenByServer = [...new Set(mcp.seen.map((h) => h.host))];
  skewMs = 31_000; // past the guard's reuse of a resolution: the next request resolves again, and is refused
  report.proxyAfterReresolve = await call();

  // 2. Anyone, signed in or not: a Client ID Metadata Document at a rebinding name, over TLS.
  const authorize = new URL(`${service.url}/oauth/authorize`);
  for (const [k, v] of Object.entries({
    response_type: "code",
    client_id: "https://cimd.test/client.json",
    redirect_uri: REDIRECT_URI,
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
    resource: proxyUrl,
    state: "s",
  }))
    authorize.searchParams.set(k, v);
  const page = await fetch(authorize, { redirect: "manual" });
  report.cimd = { status: page.status, page: (await page.text()).slice(0, 2000), documentRequests };
} catch (e) {
  report.error = (e as Error).stack;
} finally {
  report.metadata = { http: metadataRequests, tlsConnections: metadataTls };
  report.dnsQueries = Object.fromEntries(dns.counts);
  await service.stop();
  for (const server of [metadataHttp, publicMcp, publicTls]) server.stop(true);
  metadataTlsListener.stop(true);
  dns.close();
}
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(0);
