/**
 * The kubernetes driver is tested against a FAKE API server (test/peers/fake-kube-api.ts): no Kubernetes API
 * server, kind, k3s or container engine can run on the machines this project is built and tested on. The fake
 * implements the calls the driver makes, with the real API's paths, codes and Status bodies, and records them.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createLogger } from "../../src/observability/logger";
import { createKubernetesRuntime } from "../../src/runtime/kubernetes/driver";
import { buildManifests, objectName, tokenSecretName } from "../../src/runtime/kubernetes/manifests";
import { DeploymentFailed, type DeploymentSpec } from "../../src/runtime/runtime";
import { startEverything, type Peer } from "../peers/everything";
import { startFakeKube, type FakeKube } from "../peers/fake-kube-api";
import { createTestApp, steppedClock, type TestApp } from "../support/app";
import { mcpClient } from "../support/mcp";
import { waitFor } from "../support/wait";

const ID = "01a20000-0000-7000-8000-000000000001";
const spec = (accessToken: string | null = "tok-123"): DeploymentSpec => ({
  connectorId: ID,
  ownerId: "01a20000-0000-7000-8000-0000000000aa",
  stdio: {
    image: "example/everything:1",
    command: ["node", "dist/index.js"],
    args: ["stdio"],
    env: { LOG_LEVEL: "debug" },
    access_token_env_name: "EVERYTHING_TOKEN",
  },
  accessToken,
});
const silent = createLogger({ level: "error", write: () => {} });

describe("manifests", () => {
  const options = { namespace: "mcp", gatewayImage: "registry.example/connector-service:1", gatewayToken: "gw-token-1" };
  const { deployment, service, secret } = buildManifests(spec(), options);
  const pod = deployment.spec!.template.spec!;
  const [server, gateway] = pod.containers;

  test("one Deployment: the MCP server and the gateway sidecar on 8080 with a readiness probe", () => {
    expect(deployment.metadata).toMatchObject({ name: objectName(ID), namespace: "mcp" });
    expect(pod.containers.map((c) => c.name)).toEqual(["mcp-server", "gateway"]);
    expect(server!.image).toBe("example/everything:1");
    expect(server!.command!.slice(-3)).toEqual(["node", "dist/index.js", "stdio"]);
    expect(server!.command![2]).toContain("< /stdio/in > /stdio/out");
    expect(gateway!.image).toBe("registry.example/connector-service:1");
    expect(gateway!.args).toEqual(["gateway", "--port", "8080", "--fifo", "/stdio"]);
    expect(gateway!.ports).toEqual([{ name: "mcp", containerPort: 8080 }]);
    expect(gateway!.readinessProbe!.httpGet).toEqual({ path: "/healthz", port: 8080 });
    expect(service.spec!.ports).toEqual([{ name: "mcp", port: 8080, targetPort: "mcp" }]);
  });

  test("the tokens come from a Secret, never the manifest; labels name the connector; limits; no API token; non-root", () => {
    expect(JSON.stringify(deployment).includes("tok-123")).toBe(false);
    expect(JSON.stringify(deployment).includes("gw-token-1")).toBe(false);
    expect(secret.metadata!.name).toBe(tokenSecretName(ID));
    expect(secret.stringData).toEqual({ "access-token": "tok-123", "gateway-token": "gw-token-1" });
    expect(server!.env).toEqual([
      { name: "LOG_LEVEL", value: "debug" },
      { name: "EVERYTHING_TOKEN", valueFrom: { secretKeyRef: { name: tokenSecretName(ID), key: "access-token" } } },
    ]);
    // The gateway, and only the gateway, gets its token.
    expect(gateway!.env).toEqual([
      { name: "GATEWAY__TOKEN", valueFrom: { secretKeyRef: { name: tokenSecretName(ID), key: "gateway-token" } } },
    ]);
    for (const object of [deployment, service, secret])
      expect(object.metadata!.labels!["connector-service/connector-id"]).toBe(ID);
    expect(service.spec!.selector).toEqual({ "connector-service/connector-id": ID });
    for (const c of pod.containers) {
      expect(c.resources!.requests).toBeDefined();
      expect(c.resources!.limits).toBeDefined();
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        runAsNonRoot: true,
        capabilities: { drop: ["ALL"] },
      });
    }
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true });
  });

  test("the sidecar gets the service's input timeout, so its parked calls wait as long as the service's (PROXY__INPUT_TIMEOUT_SECONDS)", () => {
    const withTimeout = buildManifests(spec(), { ...options, inputTimeoutMs: 120_000 }).deployment.spec!.template.spec!;
    const [withServer, withGateway] = withTimeout.containers;
    expect(withGateway!.env).toContainEqual({ name: "PROXY__INPUT_TIMEOUT_SECONDS", value: "120" });
    // The service's setting, not the MCP server's business.
    expect(JSON.stringify(withServer!.env)).not.toContain("PROXY__INPUT_TIMEOUT_SECONDS");
  });

  test("without an access token the Secret holds only the gateway's; without a command the driver says why it cannot wrap the image", () => {
    expect(buildManifests(spec(null), options).secret.stringData).toEqual({ "gateway-token": "gw-token-1" });
    expect(() => buildManifests({ ...spec(), stdio: { image: "only/image" } }, options)).toThrow(DeploymentFailed);
  });
});

describe("the driver against the fake API server", () => {
  let kube: FakeKube;
  beforeAll(() => {
    kube = startFakeKube();
    process.env.KUBECONFIG = kube.kubeconfig;
  });
  afterAll(() => kube.stop());
  // Each test starts from an empty namespace and a Deployment that is ready at its second read.
  beforeEach(() => {
    kube.objects.clear();
    kube.requests.length = 0;
    kube.readyAfterReads = 2;
  });

  const runtime = (extra: Partial<Parameters<typeof createKubernetesRuntime>[0]> = {}) =>
    createKubernetesRuntime({
      namespace: "mcp",
      gatewayImage: "g:1",
      access: "dns",
      inputTimeoutMs: 90_000,
      log: silent,
      pollMs: 1,
      ...extra,
    });

  test("deploy creates Secret, Deployment and Service, waits for a ready replica, and names the Service's DNS endpoint", async () => {
    const driver = await runtime();
    await driver.deploy(spec());
    expect([...kube.objects.keys()].sort()).toEqual([
      `deployments/mcp/${objectName(ID)}`,
      `secrets/mcp/${tokenSecretName(ID)}`,
      `services/mcp/${objectName(ID)}`,
    ]);
    expect(driver.endpoint(ID)!.href).toBe(`http://${objectName(ID)}.mcp.svc:8080/mcp`);
    expect(await driver.list()).toEqual(new Map([[ID, { ready: true }]]));
    // The Deployment as stored gives the sidecar the input timeout the driver was given.
    const stored = kube.objects.get(`deployments/mcp/${objectName(ID)}`)!;
    const sidecar = stored.spec.template.spec.containers.find((c: { name: string }) => c.name === "gateway");
    expect(sidecar.env).toContainEqual({ name: "PROXY__INPUT_TIMEOUT_SECONDS", value: "90" });
    expect(kube.requests.every((r) => r.authorization === "Bearer fake-token")).toBe(true);
  });

  test("connecting again replaces cleanly: the same three objects, updated, no duplicates", async () => {
    const driver = await runtime();
    await driver.deploy(spec());
    const before = kube.objects.get(`deployments/mcp/${objectName(ID)}`)!.metadata.resourceVersion;
    await driver.deploy({ ...spec("tok-456") });
    expect(kube.objects.size).toBe(3);
    expect(kube.objects.get(`deployments/mcp/${objectName(ID)}`)!.metadata.resourceVersion).not.toBe(before);
    const data = () => kube.objects.get(`secrets/mcp/${tokenSecretName(ID)}`)!.data as Record<string, string>;
    expect(Buffer.from(data()["access-token"]!, "base64").toString()).toBe("tok-456");
    await driver.deploy(spec(null));
    expect(Object.keys(data())).toEqual(["gateway-token"]);
  });

  test("a Deployment never ready: after 60 s (on an injected clock) connect fails, says why, and leaves nothing", async () => {
    kube.readyAfterReads = Infinity;
    let now = 0;
    const driver = await runtime({ clock: () => now, sleep: async (ms) => void (now += ms), pollMs: 5_000 });
    const failure = await driver.deploy(spec()).catch((e) => e);
    expect(failure).toBeInstanceOf(DeploymentFailed);
    expect(failure.timedOut).toBe(true);
    expect(failure.message).toContain("not ready within 60 s");
    expect(failure.message).toContain("MinimumReplicasUnavailable");
    expect(now).toBeGreaterThanOrEqual(60_000);
    expect(now).toBeLessThan(70_000);
    expect(kube.objects.size).toBe(0);
  });

  test("remove deletes everything it created; a second remove is a no-op", async () => {
    const driver = await runtime();
    await driver.deploy(spec());
    await driver.remove(ID);
    expect(kube.objects.size).toBe(0);
    await driver.remove(ID);
    expect(kube.requests.filter((r) => r.method === "DELETE" && r.path.includes("deployments")).at(-1)!.path).toContain(
      "propagationPolicy=Foreground",
    );
  });
});

describe("the service with RUNTIME__DRIVER=kubernetes", () => {
  let kube: FakeKube;
  let upstream: Peer;
  let t: TestApp;
  const clock = steppedClock();
  const PRESETS = JSON.stringify([
    {
      url: "mcp+stdio://everything",
      metadata: { name: "Everything" },
      stdio: { image: "example/everything:1", command: ["node", "dist/index.js", "stdio"], access_token_env_name: "TOKEN" },
    },
  ]);
  beforeAll(async () => {
    kube = startFakeKube();
    process.env.KUBECONFIG = kube.kubeconfig;
    upstream = await startEverything();
    // The driver reaches the fake API server over a real socket, with the service's (stepped) clock for its waits.
    const runtime = await createKubernetesRuntime({
      namespace: "mcp",
      gatewayImage: "registry.example/connector-service:1",
      access: "proxy",
      log: silent,
      pollMs: 1,
      clock: clock.now,
      sleep: async (ms) => clock.advance(ms),
    });
    t = await createTestApp({ env: { CONNECTOR__PRESETS: PRESETS }, clock, runtime });
  });
  afterAll(async () => {
    t.close();
    await upstream.stop();
    await kube.stop();
  });

  const objectsOf = (id: string) => [...kube.objects.keys()].filter((k) => k.includes(objectName(id)));
  async function connectManaged(body: Record<string, unknown> = {}): Promise<string> {
    const created = await t.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://everything" } });
    const id = created.body.id as string;
    // The fake's service proxy sends this Service's traffic to a real MCP server (standing in for the pod).
    kube.serviceBackends.set(`mcp/${objectName(id)}`, upstream.url.replace(/\/mcp$/, ""));
    const connect = await t.api("POST", `/api/v1/connectors/${id}/connect`, { body });
    expect(connect.body.state).toBe("connected");
    return id;
  }

  test("connect deploys, the proxy reaches the Service through the API server's service proxy, disconnect and delete clean up", async () => {
    const id = await connectManaged({ accessToken: "secret-token" });
    expect(kube.objects.has(`deployments/mcp/${objectName(id)}`)).toBe(true);
    expect(JSON.stringify(kube.objects.get(`deployments/mcp/${objectName(id)}`)).includes("secret-token")).toBe(false);

    const { client, close } = await mcpClient(`${t.publicUrl}/api/v1/connectors/${id}/mcp`, { token: t.admin.token }, t.handle);
    expect(JSON.stringify(await client.callTool({ name: "echo", arguments: { message: "via the cluster" } }))).toContain(
      "Echo: via the cluster",
    );
    await close();
    expect(
      kube.requests.some(
        (r) =>
          r.path.startsWith(`/api/v1/namespaces/mcp/services/${objectName(id)}:mcp/proxy/mcp`) &&
          r.authorization === "Bearer fake-token",
      ),
    ).toBe(true);
    // Every request to the gateway carries its deployment's token, the one in the Secret.
    const stored = kube.objects.get(`secrets/mcp/${tokenSecretName(id)}`)!.data as Record<string, string>;
    const token = Buffer.from(stored["gateway-token"]!, "base64").toString();
    expect(token.length).toBeGreaterThanOrEqual(40);
    const proxied = kube.requests.filter((r) => r.path.includes(`${objectName(id)}:mcp/proxy/`));
    expect(proxied.length).toBeGreaterThan(0);
    expect(proxied.every((r) => r.gatewayToken === token)).toBe(true);
    // And names its caller (gateway/caller.ts), to whom a parked call there is bound: the same for each of its requests.
    expect(new Set(proxied.map((r) => r.caller)).size).toBe(1);
    expect(proxied[0]!.caller).toMatch(/^[\w-]{43}$/);

    await t.api("POST", `/api/v1/connectors/${id}/disconnect`);
    await waitFor("the objects to go", () => objectsOf(id).length === 0, 5_000);

    await t.api("POST", `/api/v1/connectors/${id}/connect`, { body: {} });
    expect(kube.objects.has(`deployments/mcp/${objectName(id)}`)).toBe(true);
    expect((await t.api("DELETE", `/api/v1/connectors/${id}`)).status).toBe(204);
    await waitFor("the objects to go", () => objectsOf(id).length === 0, 5_000);
  });

  test("after a restart of the service, the gateway's token is read back from its Secret", async () => {
    const id = await connectManaged();
    const restarted = await createKubernetesRuntime({
      namespace: "mcp",
      gatewayImage: "g:1",
      access: "proxy",
      log: silent,
      pollMs: 1,
    });
    kube.requests.length = 0;
    const res = await restarted.fetch(restarted.endpoint(id)!, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
    expect(res.status).toBe(200);
    await res.body?.cancel();
    const stored = kube.objects.get(`secrets/mcp/${tokenSecretName(id)}`)!.data as Record<string, string>;
    expect(kube.requests.find((r) => r.path.includes(":mcp/proxy/"))!.gatewayToken).toBe(
      Buffer.from(stored["gateway-token"]!, "base64").toString(),
    );
  });

  test("reconciliation: a deployment deleted behind the service's back is made again; one of no connector is removed", async () => {
    const id = await connectManaged();
    kube.objects.delete(`deployments/mcp/${objectName(id)}`);
    const orphan = "01a20000-0000-7000-8000-00000000dead";
    kube.objects.set(`deployments/mcp/${objectName(orphan)}`, {
      metadata: {
        name: objectName(orphan),
        resourceVersion: "1",
        labels: { "app.kubernetes.io/managed-by": "connector-service", "connector-service/connector-id": orphan },
      },
    });
    await t.runJobs();
    expect(kube.objects.has(`deployments/mcp/${objectName(id)}`)).toBe(true);
    expect(kube.objects.has(`deployments/mcp/${objectName(orphan)}`)).toBe(false);
    expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
  });

  test("a deployment that stops serving gets 60 s to recover, then its connector is disconnected with the reason", async () => {
    const id = await connectManaged();
    kube.crashing.add(objectName(id));
    await t.runJobs();
    clock.advance(59_000);
    await t.runJobs();
    expect((await t.api("GET", `/api/v1/connectors/${id}`)).body.state).toBe("connected");
    clock.advance(2_000);
    await t.runJobs();
    const connector = (await t.api("GET", `/api/v1/connectors/${id}`)).body;
    expect(connector.state).toBe("disconnected");
    expect(connector.disconnect_reason).toContain("The managed server stopped serving");
    expect(connector.disconnect_reason).toContain("CrashLoopBackOff");
    expect(kube.objects.has(`deployments/mcp/${objectName(id)}`)).toBe(false);
  });
});
