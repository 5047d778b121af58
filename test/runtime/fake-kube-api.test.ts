import { afterAll, expect, test } from "bun:test";
import { startFakeKube } from "../peers/fake-kube-api";

// The fake Kubernetes API (test/peers/fake-kube-api.ts: no real API server can run here) refuses what a real one
// would: the driver's tests (kubernetes.test.ts) pass only with objects a cluster would store.
const fake = startFakeKube();
afterAll(() => fake.stop());

const post = (path: string, body: unknown) =>
  fetch(`${fake.url}${path}`, {
    method: "POST",
    headers: { authorization: "Bearer fake-token", "content-type": "application/json" },
    body: JSON.stringify(body),
  });

const deployment = (containerName: unknown, labels: Record<string, unknown> = { app: "x" }) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "mcp-x", labels },
  spec: {
    selector: { matchLabels: { app: "x" } },
    template: { metadata: { labels: { app: "x" } }, spec: { containers: [{ name: containerName, image: "busybox" }] } },
  },
});

test("a valid Deployment is stored; one against the schema, with a bad label or a bad name is 422 Invalid", async () => {
  expect((await post("/apis/apps/v1/namespaces/mcp/deployments", deployment("server"))).status).toBe(201);

  const wrongType = await post("/apis/apps/v1/namespaces/mcp/deployments", { ...deployment(42), metadata: { name: "mcp-y" } });
  expect(wrongType.status).toBe(422);
  const status = (await wrongType.json()) as { reason: string; message: string };
  expect(status.reason).toBe("Invalid");
  expect(status.message).toContain("containers/0/name must be string");

  const badLabel = await post("/apis/apps/v1/namespaces/mcp/deployments", {
    ...deployment("server", { app: "x".repeat(64) }),
    metadata: { name: "mcp-z", labels: { app: "x".repeat(64) } },
  });
  expect(badLabel.status).toBe(422);

  const service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "Not_A_Label" },
    spec: { selector: { app: "x" }, ports: [{ name: "mcp", port: 80 }] },
  };
  const badName = await post("/api/v1/namespaces/mcp/services", service);
  expect(badName.status).toBe(422);
  expect(((await badName.json()) as { message: string }).message).toContain("DNS-1123 label");
});

test("an object of another kind than the URL's is 400", async () => {
  const res = await post("/api/v1/namespaces/mcp/services", deployment("server"));
  expect(res.status).toBe(400);
});
