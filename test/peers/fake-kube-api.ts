import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A FAKE Kubernetes API server. No real API server (nor kind, k3s or a container engine) can run on the
 * machines this project is built and tested on, so the driver is tested against this loopback stand-in. It
 * implements exactly what the driver calls — create/read/replace/delete/list of Deployments, Services and
 * Secrets, and the service proxy — with the API's status codes and Status bodies, and records every object
 * and request. Whether a Deployment becomes ready is up to the test.
 */
export type FakeKube = {
  url: string;
  kubeconfig: string;
  objects: Map<string, Record<string, any>>;
  requests: { method: string; path: string; authorization: string | null; gatewayToken: string | null }[];
  /** How many reads of a Deployment before it reports a ready replica (Infinity: never). */
  readyAfterReads: number;
  /** Deployments (by name) that report no ready replica whatever else holds: a pod in a crash loop. */
  crashing: Set<string>;
  /** Where the service proxy of a Service sends requests (the test's stand-in for the pod). */
  serviceBackends: Map<string, string>;
  stop(): Promise<void>;
};

const status = (code: number, reason: string, message: string) =>
  Response.json({ kind: "Status", apiVersion: "v1", status: "Failure", reason, message, code }, { status: code });

export function startFakeKube(token = "fake-token"): FakeKube {
  const objects = new Map<string, Record<string, any>>();
  const reads = new Map<string, number>();
  const fake: FakeKube = {
    url: "",
    kubeconfig: "",
    objects,
    requests: [],
    readyAfterReads: 2,
    crashing: new Set(),
    serviceBackends: new Map(),
    stop: async () => {},
  };
  let version = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      fake.requests.push({
        method: request.method,
        path: url.pathname + url.search,
        authorization: request.headers.get("authorization"),
        gatewayToken: request.headers.get("x-connector-gateway-token"),
      });
      if (request.headers.get("authorization") !== `Bearer ${token}`) return status(401, "Unauthorized", "bad token");

      const proxy = /^\/api\/v1\/namespaces\/([^/]+)\/services\/([^/:]+):mcp\/proxy(\/.*)$/.exec(url.pathname);
      if (proxy) {
        const backend = fake.serviceBackends.get(`${proxy[1]}/${proxy[2]}`);
        if (!backend) return status(503, "ServiceUnavailable", "no endpoints available for service");
        const headers = new Headers(request.headers);
        headers.delete("authorization");
        return fetch(`${backend}${proxy[3]}`, {
          method: request.method,
          headers,
          body: request.body,
          duplex: "half",
          decompress: false,
        } as RequestInit);
      }

      const m = /^\/(?:apis\/apps\/v1|api\/v1)\/namespaces\/([^/]+)\/(deployments|services|secrets)(?:\/([^/]+))?$/.exec(
        url.pathname,
      );
      if (!m) return status(404, "NotFound", `the fake does not serve ${url.pathname}`);
      const [, namespace, resource, name] = m as unknown as [string, string, string, string | undefined];
      const key = (n: string) => `${resource}/${namespace}/${n}`;

      if (!name && request.method === "GET") {
        const selector = url.searchParams.get("labelSelector");
        const [lk, lv] = selector ? selector.split("=") : [];
        const items = [...objects.entries()]
          .filter(([k, o]) => k.startsWith(`${resource}/${namespace}/`) && (!lk || o.metadata?.labels?.[lk!] === lv))
          .map(([, o]) => withStatus(o));
        return Response.json({ kind: "List", apiVersion: "v1", metadata: {}, items });
      }
      if (!name && request.method === "POST") {
        const body = asStored((await request.json()) as Record<string, any>);
        if (objects.has(key(body.metadata.name)))
          return status(409, "AlreadyExists", `${resource} "${body.metadata.name}" already exists`);
        body.metadata = { ...body.metadata, namespace, resourceVersion: String(++version), generation: 1 };
        objects.set(key(body.metadata.name), body);
        return Response.json(body, { status: 201 });
      }
      if (!name) return status(405, "MethodNotAllowed", "method not allowed");
      const current = objects.get(key(name));
      if (!current) return status(404, "NotFound", `${resource} "${name}" not found`);
      if (request.method === "GET") return Response.json(withStatus(current));
      if (request.method === "PUT") {
        const body = asStored((await request.json()) as Record<string, any>);
        if (body.metadata?.resourceVersion !== current.metadata.resourceVersion)
          return status(409, "Conflict", "the object has been modified");
        body.metadata = {
          ...body.metadata,
          namespace,
          resourceVersion: String(++version),
          generation: (current.metadata.generation ?? 1) + 1,
        };
        objects.set(key(name), body);
        reads.delete(key(name));
        return Response.json(body);
      }
      if (request.method === "DELETE") {
        objects.delete(key(name));
        reads.delete(key(name));
        return Response.json({ kind: "Status", apiVersion: "v1", status: "Success", code: 200 });
      }
      return status(405, "MethodNotAllowed", "method not allowed");

      /** As the API server stores a Secret: `stringData` is write-only, merged into `data` as base64. */
      function asStored(object: Record<string, any>) {
        if (resource !== "secrets" || !object.stringData) return object;
        const { stringData, ...rest } = object;
        const encoded = Object.fromEntries(
          Object.entries(stringData as Record<string, string>).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
        );
        return { ...rest, data: { ...rest.data, ...encoded } };
      }

      function withStatus(object: Record<string, any>) {
        if (resource !== "deployments") return object;
        const k = key(object.metadata.name);
        const n = (reads.get(k) ?? 0) + 1;
        reads.set(k, n);
        const ready = n > fake.readyAfterReads && !fake.crashing.has(object.metadata.name);
        return {
          ...object,
          status: ready
            ? { replicas: 1, readyReplicas: 1, availableReplicas: 1, observedGeneration: object.metadata.generation }
            : fake.crashing.has(object.metadata.name)
              ? {
                  replicas: 1,
                  unavailableReplicas: 1,
                  conditions: [
                    { type: "Available", status: "False", reason: "CrashLoopBackOff", message: "The MCP server keeps exiting." },
                  ],
                }
              : {
                  replicas: 1,
                  unavailableReplicas: 1,
                  conditions: [
                    {
                      type: "Available",
                      status: "False",
                      reason: "MinimumReplicasUnavailable",
                      message: "Deployment does not have minimum availability.",
                    },
                  ],
                },
        };
      }
    },
  });
  fake.url = `http://127.0.0.1:${server.port}`;
  const dir = mkdtempSync(join(tmpdir(), "cs-kube-"));
  fake.kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    fake.kubeconfig,
    `apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: ${fake.url}
    # Plain http on loopback: client-node accepts it only with this set.
    insecure-skip-tls-verify: true
users:
- name: tester
  user:
    token: ${token}
contexts:
- name: fake
  context:
    cluster: fake
    user: tester
    namespace: mcp
current-context: fake
`,
  );
  fake.stop = () => server.stop(true);
  return fake;
}
