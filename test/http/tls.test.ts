import { healthcheck } from "../../src/cli/healthcheck";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes, X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:tls";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ConfigError } from "../../src/config/load";
import { StartFailed } from "../../src/cli/serve";
import { scriptedServer, type ScriptedServer } from "../peers/scripted-server";
import { apiOver, type Api } from "../support/api";
import { connectedConnector, mcpClient } from "../support/mcp";
import { ADMIN, startTestService, type TestService } from "../support/service";
import { testDatabaseEnv } from "../support/store";

// HTTPS served by the service itself (SERVER__TLS_CERT_FILE, SERVER__TLS_KEY_FILE) and the certificate reloaded
// on SIGHUP without dropping the connections that are open. Certificates are made here with openssl, self-signed
// for 127.0.0.1; every client trusts exactly the certificates it is given.

const ROOT = resolve(import.meta.dir, "../..");
const work = mkdtempSync(join(tmpdir(), "cs-tls-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

type Pem = { cert: string; key: string; fingerprint: string };
let first: Pem;
let second: Pem;

/** A self-signed certificate for 127.0.0.1 (EC P-256) and its key, made by openssl. */
async function makeCertificate(name: string): Promise<Pem> {
  const certFile = join(work, `${name}.crt`);
  const keyFile = join(work, `${name}.key`);
  const openssl = Bun.spawn(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=${name}`,
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      keyFile,
      "-out",
      certFile,
    ],
    { stdin: "ignore", stdout: "ignore", stderr: "pipe" },
  );
  if ((await openssl.exited) !== 0) throw new Error(`openssl: ${await new Response(openssl.stderr).text()}`);
  const cert = readFileSync(certFile, "utf8");
  return { cert, key: readFileSync(keyFile, "utf8"), fingerprint: new X509Certificate(cert).fingerprint256 };
}

beforeAll(async () => {
  [first, second] = await Promise.all([makeCertificate("first.cs.test"), makeCertificate("second.cs.test")]);
});

/** The two files a service is configured with, in a directory of their own; `install` (re)writes them. */
function tlsFiles(pem: Pem) {
  const dir = mkdtempSync(join(work, "files-"));
  const files = { cert: join(dir, "tls.crt"), key: join(dir, "tls.key") };
  const install = (next: Pem) => {
    writeFileSync(files.key, next.key, { mode: 0o600 });
    writeFileSync(files.cert, next.cert);
  };
  install(pem);
  return { ...files, install, env: { SERVER__TLS_CERT_FILE: files.cert, SERVER__TLS_KEY_FILE: files.key } };
}

const portOf = (url: string) => Number(new URL(url).port);

/** The SHA-256 fingerprint of the certificate a new TLS handshake with 127.0.0.1:`port` gets, verified against `ca`. */
function servedFingerprint(port: number, ca: string[] = [first.cert, second.cert]): Promise<string> {
  return new Promise((resolveFingerprint, reject) => {
    const socket = connect({ host: "127.0.0.1", port, ca }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolveFingerprint(fingerprint);
    });
    socket.once("error", reject);
  });
}

/** fetch on a new connection, trusting only `ca`. */
const fetchTrusting = (ca: string | string[], input: string | Request, init: RequestInit = {}) =>
  fetch(input, { ...init, keepalive: false, tls: { ca } });

/** An upstream MCP server on loopback (scripted: MCP for connect, then endless event streams). */
function startUpstream(): { mcp: ScriptedServer; url: string; stop(): Promise<void> } {
  const mcp = scriptedServer(20);
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: (request) => mcp.handler(request) });
  return { mcp, url: `http://127.0.0.1:${server.port}/mcp`, stop: () => server.stop(true) };
}

/** A POST through the proxy answered with an event stream; resolves with a reader of its ticks. */
async function openStream(url: string, ca: string[], as = ADMIN) {
  const response = await fetchTrusting(ca, url, {
    method: "POST",
    headers: {
      authorization: `Basic ${Buffer.from(`${as.username}:${as.password}`).toString("base64")}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(response.headers.get("content-type")).toStartWith("text/event-stream");
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let seen = 0;
  return {
    /** Reads until a tick numbered above `after` arrives; returns that number. */
    async tickAfter(after: number): Promise<number> {
      let buffered = "";
      while (seen <= after) {
        const chunk = await reader.read();
        if (chunk.done) throw new Error(`the stream ended after tick ${seen}`);
        buffered += decoder.decode(chunk.value, { stream: true });
        for (const match of buffered.matchAll(/"tick":(\d+)/g)) seen = Math.max(seen, Number(match[1]));
        buffered = buffered.slice(buffered.lastIndexOf("\n") + 1);
      }
      return seen;
    },
    cancel: () => reader.cancel(),
  };
}

/** Fails when any line of a private key's body shows up in `text` (a log). */
function expectNoKeyMaterial(text: string): void {
  for (const pem of [first, second]) {
    const body = pem.key.split("\n").filter((line) => line && !line.startsWith("-----"));
    expect(body.filter((line) => text.includes(line))).toEqual([]);
  }
}

const logLines = (service: TestService) => service.logs.map((line) => JSON.parse(line) as Record<string, unknown>);

describe("in process", () => {
  let upstream: ReturnType<typeof startUpstream>;
  beforeAll(() => {
    upstream = startUpstream();
  });
  afterAll(() => upstream.stop());

  test("serves https with the configured certificate; the default public URL is https; the native proxy route works over it", async () => {
    const files = tlsFiles(first);
    const service = await startTestService({ SERVER__HOST: "127.0.0.1", ...files.env });
    try {
      expect(service.url).toBe(`https://127.0.0.1:${portOf(service.url)}`);
      expect(service.deps.publicUrl()).toBe(service.url);
      expect(logLines(service).find((l) => l.msg === "connector-service listening")).toMatchObject({
        url: service.url,
        public_url: service.url,
        tls: { subject: "CN=first.cs.test", fingerprint_sha256: first.fingerprint },
      });

      const healthz = await fetchTrusting(first.cert, `${service.url}/healthz`);
      expect(healthz.status).toBe(200);
      expect(await servedFingerprint(portOf(service.url))).toBe(first.fingerprint);
      // Really verified: a client that trusts another certificate refuses it; plain http gets no answer.
      await expect(fetchTrusting(second.cert, `${service.url}/healthz`)).rejects.toThrow();
      await expect(fetch(`http://127.0.0.1:${portOf(service.url)}/healthz`, { keepalive: false })).rejects.toThrow();

      // The API (Elysia) and the MCP proxy (Bun's native route) over TLS: connect, then an MCP session through it.
      const api: Api = apiOver((request) => fetchTrusting(first.cert, request), service.url, ADMIN);
      upstream.mcp.mode = "mcp";
      const id = await connectedConnector(api, upstream.url);
      const { client, close } = await mcpClient(`${service.url}/api/v1/connectors/${id}/mcp`, ADMIN, (request) =>
        fetchTrusting(first.cert, request),
      );
      expect(client.getServerVersion()?.name).toBe("scripted");
      await close();
      expect(
        logLines(service).some((l) => l.msg === "request" && l.path === `/api/v1/connectors/${id}/mcp` && l.status === 200),
      ).toBe(true);
      // The container's and systemd's health check speaks https to it too.
      expect(
        await healthcheck({ SERVER__HOST: "127.0.0.1", SERVER__PORT: String(portOf(service.url)), ...files.env }, undefined),
      ).toBe(0);
    } finally {
      await service.stop();
    }
  });

  test("a reload (what SIGHUP calls) gives new handshakes the new certificate while an event stream opened before it goes on", async () => {
    const files = tlsFiles(first);
    const service = await startTestService({ SERVER__HOST: "127.0.0.1", ...files.env });
    const port = portOf(service.url);
    const both = [first.cert, second.cert];
    try {
      upstream.mcp.mode = "mcp";
      const id = await connectedConnector(
        apiOver((request) => fetchTrusting(first.cert, request), service.url, ADMIN),
        upstream.url,
      );
      upstream.mcp.mode = "stream";
      const stream = await openStream(`${service.url}/api/v1/connectors/${id}/mcp`, both);
      const beforeReload = await stream.tickAfter(0);

      files.install(second);
      expect(service.reloadTls()).toBe(true);

      expect(await servedFingerprint(port)).toBe(second.fingerprint);
      expect(await servedFingerprint(port, [second.cert])).toBe(second.fingerprint);
      expect((await fetchTrusting(second.cert, `${service.url}/healthz`)).status).toBe(200);
      await expect(fetchTrusting(first.cert, `${service.url}/healthz`)).rejects.toThrow();
      // The stream that began under the first certificate keeps delivering, on its connection, after the reload.
      const later = await stream.tickAfter(beforeReload + 5);
      expect(later).toBeGreaterThan(beforeReload + 5);
      await stream.cancel();

      const reloaded = logLines(service).find((l) => l.msg?.toString().startsWith("TLS certificate reloaded"));
      expect(reloaded).toMatchObject({ level: "info", subject: "CN=second.cs.test", fingerprint_sha256: second.fingerprint });
      expectNoKeyMaterial(service.logs.join("\n"));
    } finally {
      upstream.mcp.mode = "mcp";
      await service.stop();
    }
  });

  test("a reload from a bad file keeps serving the previous certificate and logs why, naming the setting", async () => {
    const files = tlsFiles(first);
    const service = await startTestService({ SERVER__HOST: "127.0.0.1", ...files.env });
    const port = portOf(service.url);
    try {
      const failures = () =>
        logLines(service).filter(
          (l) => l.level === "error" && l.msg === "TLS certificate not reloaded: still serving the previous one",
        );

      // A renewal caught half-way: the new certificate is there, its key not yet.
      writeFileSync(files.cert, second.cert);
      expect(service.reloadTls()).toBe(false);
      expect(failures().at(-1)).toMatchObject({
        setting: "SERVER__TLS_KEY_FILE",
        reason: `${files.key} is not the private key of the certificate in ${files.cert}`,
      });
      expect(await servedFingerprint(port)).toBe(first.fingerprint);

      writeFileSync(files.key, "not a key\n");
      expect(service.reloadTls()).toBe(false);
      expect(failures().at(-1)).toMatchObject({ setting: "SERVER__TLS_KEY_FILE" });
      expect(String(failures().at(-1)!.reason)).toContain("holds no PEM private key");

      rmSync(files.cert);
      expect(service.reloadTls()).toBe(false);
      expect(failures().at(-1)).toMatchObject({
        setting: "SERVER__TLS_CERT_FILE",
        reason: `cannot read ${files.cert}: no such file`,
      });
      expect(await servedFingerprint(port)).toBe(first.fingerprint);
      expect((await fetchTrusting(first.cert, `${service.url}/healthz`)).status).toBe(200);

      // Once both files are right, the next reload applies them.
      files.install(second);
      expect(service.reloadTls()).toBe(true);
      expect(await servedFingerprint(port)).toBe(second.fingerprint);
      expectNoKeyMaterial(service.logs.join("\n"));
    } finally {
      await service.stop();
    }
  });

  test("without TLS settings a reload changes nothing and says so", async () => {
    const service = await startTestService();
    try {
      expect(service.url).toStartWith("http://");
      expect(service.reloadTls()).toBe(false);
      expect(logLines(service).at(-1)).toMatchObject({
        level: "warn",
        msg: "no TLS certificate to reload: SERVER__TLS_CERT_FILE and SERVER__TLS_KEY_FILE are not set",
      });
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    } finally {
      await service.stop();
    }
  });

  test("a second service on the port of a TLS one is refused (the listeners that allow reloads do not share ports between starts)", async () => {
    const files = tlsFiles(first);
    const service = await startTestService({ SERVER__HOST: "127.0.0.1", ...files.env });
    try {
      const port = portOf(service.url);
      const again = startTestService({
        SERVER__HOST: "127.0.0.1",
        SERVER__PORT: String(port),
        DATABASE__PATH: ":memory:",
        ...files.env,
      });
      await expect(again).rejects.toThrow(
        new StartFailed(`127.0.0.1:${port} is already in use: stop what listens there, or set SERVER__PORT to another port`),
      );
      expect(await servedFingerprint(port)).toBe(first.fingerprint);
    } finally {
      await service.stop();
    }
  });
});

describe("start-up refuses TLS settings it cannot serve, naming the setting", () => {
  const refusal = async (env: Record<string, string>) => {
    try {
      const service = await startTestService({ DATABASE__PATH: ":memory:", ...env });
      await service.stop();
    } catch (e) {
      if (e instanceof ConfigError) return e.message;
      throw e;
    }
    throw new Error("expected a ConfigError");
  };

  test("one setting without the other", async () => {
    const files = tlsFiles(first);
    expect(await refusal({ SERVER__TLS_CERT_FILE: files.cert })).toBe(
      "SERVER__TLS_KEY_FILE: must be set when SERVER__TLS_CERT_FILE is (the certificate's private key, PEM)",
    );
    expect(await refusal({ SERVER__TLS_KEY_FILE: files.key })).toBe(
      "SERVER__TLS_CERT_FILE: must be set when SERVER__TLS_KEY_FILE is (the certificate chain, PEM)",
    );
  });

  test("files that are missing, not PEM, or do not belong together", async () => {
    const files = tlsFiles(first);
    const missing = join(work, "no-such.crt");
    expect(await refusal({ ...files.env, SERVER__TLS_CERT_FILE: missing })).toBe(
      `SERVER__TLS_CERT_FILE: cannot read ${missing}: no such file`,
    );
    expect(await refusal({ ...files.env, SERVER__TLS_CERT_FILE: files.key })).toBe(
      `SERVER__TLS_CERT_FILE: ${files.key} holds no PEM certificate`,
    );
    expect(await refusal({ ...files.env, SERVER__TLS_KEY_FILE: files.cert })).toStartWith(
      `SERVER__TLS_KEY_FILE: ${files.cert} holds no PEM private key (unencrypted: PKCS #8, RSA or EC)`,
    );
    const otherKey = join(work, "second.cs.test.key");
    expect(await refusal({ ...files.env, SERVER__TLS_KEY_FILE: otherKey })).toBe(
      `SERVER__TLS_KEY_FILE: ${otherKey} is not the private key of the certificate in ${files.cert}`,
    );
  });
});

test("`connector-service serve` with one TLS setting and not the other exits 2 with one line naming the missing one", () => {
  const files = tlsFiles(first);
  const run = Bun.spawnSync([process.execPath, join(ROOT, "src/index.ts"), "serve"], {
    cwd: work,
    env: {
      PATH: process.env.PATH!,
      BUN_CONFIG_MAX_HTTP_REQUESTS: "8192",
      DATABASE__PATH: join(work, "never.db"),
      SERVER__TLS_CERT_FILE: files.cert,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(run.exitCode).toBe(2);
  expect(run.stderr.toString().trim().split("\n")).toEqual([
    "connector-service: configuration error: SERVER__TLS_KEY_FILE: must be set when SERVER__TLS_CERT_FILE is (the certificate's private key, PEM)",
  ]);
  expect(run.stdout.toString()).toBe("");
});

/** Lines of a process's stdout as they come; `next(predicate)` resolves with the first line (seen or to come) that matches. */
function lineReader(stdout: ReadableStream<Uint8Array>) {
  const lines: Record<string, unknown>[] = [];
  const waiting: { match: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }[] = [];
  let ended!: () => void;
  const done = new Promise<void>((resolveDone) => (ended = resolveDone));
  (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    const reader = stdout.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      buffered += decoder.decode(chunk.value, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>;
        buffered = buffered.slice(nl + 1);
        lines.push(line);
        for (const waiter of waiting.filter((w) => w.match(line))) {
          waiting.splice(waiting.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
    ended();
  })();
  return {
    lines,
    next(match: (line: Record<string, unknown>) => boolean, from = 0): Promise<Record<string, unknown>> {
      const seen = lines.slice(from).find(match);
      if (seen) return Promise.resolve(seen);
      return Promise.race([
        new Promise<Record<string, unknown>>((resolveLine) => waiting.push({ match, resolve: resolveLine })),
        done.then(() => Promise.reject(new Error(`the process ended; its log: ${JSON.stringify(lines)}`))),
      ]);
    },
  };
}

test("`connector-service serve` as its own process reloads on a real SIGHUP; an event stream opened before goes on; a bad file keeps the old certificate", async () => {
  const files = tlsFiles(first);
  const upstream = startUpstream();
  const proc = Bun.spawn([process.execPath, join(ROOT, "src/index.ts"), "serve"], {
    cwd: work,
    env: {
      PATH: process.env.PATH!,
      BUN_CONFIG_MAX_HTTP_REQUESTS: "8192",
      ...(await testDatabaseEnv()),
      SECRETS__KEY: randomBytes(32).toString("base64"),
      AUTH__ADMIN_PASSWORD: ADMIN.password,
      SERVER__HOST: "127.0.0.1",
      SERVER__PORT: "0",
      SCHEDULER__INTERVAL_SECONDS: "3600",
      ...files.env,
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const log = lineReader(proc.stdout);
  try {
    const listening = await log.next((l) => l.msg === "connector-service listening");
    const url = String(listening.url);
    expect(url).toStartWith("https://127.0.0.1:");
    expect(listening.public_url).toBe(url);
    const port = portOf(url);
    expect(await servedFingerprint(port)).toBe(first.fingerprint);

    const id = await connectedConnector(
      apiOver((request) => fetchTrusting(first.cert, request), url, ADMIN),
      upstream.url,
    );
    upstream.mcp.mode = "stream";
    const stream = await openStream(`${url}/api/v1/connectors/${id}/mcp`, [first.cert]);
    const beforeReload = await stream.tickAfter(0);

    files.install(second);
    let from = log.lines.length;
    proc.kill("SIGHUP");
    expect(await log.next((l) => String(l.msg).startsWith("TLS certificate reloaded"), from)).toMatchObject({
      fingerprint_sha256: second.fingerprint,
    });
    expect(await servedFingerprint(port)).toBe(second.fingerprint);
    expect(await stream.tickAfter(beforeReload + 5)).toBeGreaterThan(beforeReload + 5);

    // A key that does not fit: logged, and the second certificate is still the one served.
    writeFileSync(files.key, first.key);
    from = log.lines.length;
    proc.kill("SIGHUP");
    expect(await log.next((l) => l.level === "error", from)).toMatchObject({
      msg: "TLS certificate not reloaded: still serving the previous one",
      setting: "SERVER__TLS_KEY_FILE",
    });
    expect(await servedFingerprint(port)).toBe(second.fingerprint);
    // The stream from before both reloads is still open.
    expect(await stream.tickAfter(beforeReload + 10)).toBeGreaterThan(beforeReload + 10);
    await stream.cancel();

    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    expect(log.lines.at(-1)).toMatchObject({ msg: "stopped" });
    expectNoKeyMaterial(JSON.stringify(log.lines));
  } finally {
    proc.kill("SIGKILL");
    await upstream.stop();
  }
});
