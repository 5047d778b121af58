import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";

/**
 * A FAKE Kubernetes API server. No real API server (nor kind, k3s or a container engine) can run on the
 * machines this project is built and tested on, so the driver is tested against this loopback stand-in. It
 * implements exactly what the driver calls — create/read/replace/delete/list of Deployments, Services and
 * Secrets, and the service proxy — with the API's status codes and Status bodies, and records every object
 * and request. Whether a Deployment becomes ready is up to the test.
 *
 * Like a real API server it refuses what it could not store: every object created or replaced is validated against
 * the official OpenAPI schemas (kubernetes-models, generated from them) and against the API server's own rules on
 * names and labels (validateObjectMeta), and answered 422 "Invalid" with what is wrong — a malformed object cannot
 * pass unnoticed. A kind that does not match the URL is a 400.
 */
export type FakeKube = {
  url: string;
  kubeconfig: string;
  objects: Map<string, Record<string, any>>;
  /** Each request: its method, path, credentials, and the caller digest the proxy names to a gateway (gateway/caller.ts). */
  requests: { method: string; path: string; authorization: string | null; gatewayToken: string | null; caller: string | null }[];
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

/** What each resource of the fake stores: its kind, apiVersion and the model that validates it. */
const KINDS = {
  deployments: { kind: "Deployment", apiVersion: "apps/v1", model: Deployment, name: "subdomain" },
  services: { kind: "Service", apiVersion: "v1", model: Service, name: "label" },
  secrets: { kind: "Secret", apiVersion: "v1", model: Secret, name: "subdomain" },
} as const;
/** Kubernetes' DNS-1123 label (a Service's name: it becomes a DNS label) and subdomain. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A label's value: at most 63 characters, alphanumerics with - _ . inside. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** Why the API server would refuse `object` as a `resource`, or undefined. */
export function invalidObject(resource: keyof typeof KINDS, object: Record<string, any>): string | undefined {
  const expected = KINDS[resource];
  const problems: string[] = [];
  const name = object.metadata?.name;
  if (typeof name !== "string" || !(expected.name === "label" ? DNS_LABEL : DNS_SUBDOMAIN).test(name))
    problems.push(`metadata.name: Invalid value: ${JSON.stringify(name)}: must be a DNS-1123 ${expected.name}`);
  for (const where of ["metadata.labels", "spec.selector.matchLabels", "spec.template.metadata.labels", "spec.selector"]) {
    const labels = where.split(".").reduce<any>((o, k) => o?.[k], object);
    if (where === "spec.selector" && resource !== "services") continue;
    for (const [k, v] of Object.entries((labels ?? {}) as Record<string, unknown>))
      if (typeof v !== "string" || !LABEL_VALUE.test(v)) problems.push(`${where}.${k}: Invalid value: ${JSON.stringify(v)}`);
  }
  try {
    new expected.model(object as never).validate();
  } catch (e) {
    problems.push((e as Error).message);
  }
  return problems.length > 0 ? problems.join("; ") : undefined;
}

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
        caller: request.headers.get("x-connector-service-caller"),
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
      const [, namespace, resource, name] = m as unknown as [string, string, keyof typeof KINDS, string | undefined];
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
        const refused = await refusal();
        if (refused) return refused;
        const body = asStored((await request.clone().json()) as Record<string, any>);
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
        const refused = await refusal();
        if (refused) return refused;
        const body = asStored((await request.clone().json()) as Record<string, any>);
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

      /** A 400 for a kind that is not the URL's, a 422 for an object the API server would not store. */
      async function refusal(): Promise<Response | undefined> {
        const object = (await request.clone().json()) as Record<string, any>;
        const expected = KINDS[resource];
        if (object.kind !== expected.kind || object.apiVersion !== expected.apiVersion)
          return status(
            400,
            "BadRequest",
            `the API version in the data (${object.apiVersion}) does not match the expected API version (${expected.apiVersion}) or kind ${object.kind}`,
          );
        const why = invalidObject(resource, object);
        return why ? status(422, "Invalid", `${expected.kind} "${object.metadata?.name}" is invalid: ${why}`) : undefined;
      }

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
