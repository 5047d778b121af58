import { expect, test } from "bun:test";
import { resolve } from "node:path";
import { settingNames } from "../../src/config/load";

// The Kubernetes manifests: parsed and checked, since no API server can run here (they are not applied).
const load = async (file: string) =>
  Bun.YAML.parse(await Bun.file(resolve(import.meta.dir, "../../deploy/kubernetes", file)).text()) as any[];
const byKind = (docs: any[], kind: string) => docs.filter((d) => d.kind === kind);

test("the replicas layout shares every cluster-wide part with the single-replica one, and differs where it must", async () => {
  const single = await load("connector-service.yaml");
  const replicas = await load("connector-service-replicas.yaml");
  for (const kind of ["Namespace", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy", "Service"]) {
    expect({ kind, docs: byKind(replicas, kind) }).toEqual({ kind, docs: byKind(single, kind) });
  }
  const [one] = byKind(single, "Deployment");
  const [many] = byKind(replicas, "Deployment");
  expect(one.spec.replicas).toBe(1);
  expect(byKind(single, "PersistentVolumeClaim")).toHaveLength(1);
  expect(many.spec.replicas).toBeGreaterThanOrEqual(2);
  expect(byKind(replicas, "PersistentVolumeClaim")).toHaveLength(0);
  expect(many.spec.template.spec.volumes).toBeUndefined();

  const container = many.spec.template.spec.containers[0];
  const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
  expect(env.DATABASE__URL).toEqual({ secretKeyRef: { name: "connector-service-secrets", key: "database-url" } });
  expect(env.DATABASE__PATH).toBeUndefined();
  expect(env.SECRETS__KEY).toEqual({ secretKeyRef: { name: "connector-service-secrets", key: "secrets-key" } });
  expect(env.RUNTIME__DRIVER).toBe("kubernetes"); // the local runtime is refused on PostgreSQL
  expect(container.readinessProbe.httpGet.path).toBe("/readyz");

  const [budget] = byKind(replicas, "PodDisruptionBudget");
  expect(budget.spec.minAvailable).toBeLessThan(many.spec.replicas);
  expect(budget.spec.selector.matchLabels).toEqual(many.spec.template.metadata.labels);

  // Every variable either manifest sets is a setting the service knows.
  const known = new Set(settingNames());
  for (const deployment of [one, many]) {
    for (const { name } of deployment.spec.template.spec.containers[0].env)
      expect({ name, known: known.has(name) }).toEqual({ name, known: true });
  }
});
