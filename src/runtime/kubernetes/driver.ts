import type { FetchLike } from "../../http/fetch";
import type { Logger } from "../../observability/logger";
import { DeploymentFailed, READINESS_TIMEOUT_MS, type DeploymentState, type Runtime } from "../runtime";
import { randomBytes } from "node:crypto";
import { GATEWAY_TOKEN_HEADER } from "../../gateway/token";
import {
  buildManifests,
  CONNECTOR_LABEL,
  GATEWAY_PORT,
  GATEWAY_TOKEN_KEY,
  MANAGED_BY,
  objectName,
  tokenSecretName,
} from "./manifests";
import { readFileSync } from "node:fs";

export type KubernetesRuntimeOptions = {
  namespace: string;
  gatewayImage: string;
  /** `dns`: the Service's cluster DNS name (the service runs in the cluster); `proxy`: the API server's service proxy. */
  access: "dns" | "proxy";
  /** How long a 2026-07-28 client's call parked at a sidecar waits for its retry (PROXY__INPUT_TIMEOUT_SECONDS). */
  inputTimeoutMs?: number;
  log: Logger;
  readinessTimeoutMs?: number;
  pollMs?: number;
  clock?: () => number;
  sleep?: (ms: number) => Promise<void>;
};

type ApiError = { code?: number; body?: unknown; message?: string };
const status = (e: unknown) => (e as ApiError).code;
const describe = (e: unknown) => {
  const body = (e as ApiError).body;
  const message =
    typeof body === "string"
      ? (JSON.parse(body || "{}") as { message?: string }).message
      : (body as { message?: string } | undefined)?.message;
  return `${status(e) ?? "no answer"}: ${message ?? (e as Error).message}`;
};

/**
 * The `kubernetes` driver (@kubernetes/client-node 1.4.x, imported only when chosen: it costs ~100 ms of
 * start-up): a Secret (the gateway's token, and the access token if any), a Deployment (server + gateway sidecar)
 * and a Service per connector, in KUBERNETES__NAMESPACE. Connecting again replaces all three; readiness is the
 * Deployment's ready replica (the gateway's probe passes once the server answered initialize), waited for up to 60 s.
 */
export async function createKubernetesRuntime(options: KubernetesRuntimeOptions): Promise<Runtime> {
  const k8s = await import("@kubernetes/client-node");
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const { namespace, log } = options;
  const clock = options.clock ?? Date.now;
  const sleep = options.sleep ?? Bun.sleep;
  const readinessTimeoutMs = options.readinessTimeoutMs ?? READINESS_TIMEOUT_MS;
  const selector = `${MANAGED_BY}=connector-service`;

  /** Creates the object, or replaces it when it exists (connect is idempotent). */
  async function upsert<T extends { metadata?: { name?: string; resourceVersion?: string } }>(
    kind: string,
    body: T,
    create: () => Promise<unknown>,
    read: () => Promise<T>,
    replace: (current: T) => Promise<unknown>,
  ) {
    try {
      await create();
    } catch (e) {
      if (status(e) !== 409) throw new DeploymentFailed(`could not create the ${kind} ${body.metadata?.name}: ${describe(e)}`);
      const current = await read();
      await replace({ ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } });
    }
  }

  const ignoreMissing = (e: unknown) => {
    if (status(e) !== 404) throw e;
  };

  async function remove(connectorId: string): Promise<void> {
    const name = objectName(connectorId);
    gatewayTokens.delete(connectorId);
    // Foreground: the pods go before the Deployment does, so nothing is left running behind it.
    await apps.deleteNamespacedDeployment({ name, namespace, propagationPolicy: "Foreground" }).catch(ignoreMissing);
    await core.deleteNamespacedService({ name, namespace }).catch(ignoreMissing);
    await core.deleteNamespacedSecret({ name: tokenSecretName(connectorId), namespace }).catch(ignoreMissing);
  }

  function readiness(deployment: {
    status?: { readyReplicas?: number; conditions?: { type?: string; status?: string; reason?: string; message?: string }[] };
  }): DeploymentState {
    if ((deployment.status?.readyReplicas ?? 0) >= 1) return { ready: true };
    const failing = deployment.status?.conditions?.find((c) => c.status === "False" || c.reason === "ProgressDeadlineExceeded");
    return {
      ready: false,
      reason: failing ? `${failing.reason ?? failing.type}: ${failing.message ?? ""}`.trim() : "no ready replica",
    };
  }

  // Outside the cluster, the Service is reached through the API server's service proxy, with the kubeconfig's
  // credentials (Bun's fetch takes TLS material directly; Node agents would be ignored under Bun).
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  const read = (data?: string, file?: string) =>
    data ? Buffer.from(data, "base64").toString() : file ? readFileSync(file, "utf8") : undefined;
  const tls = {
    ca: read(cluster?.caData, cluster?.caFile),
    cert: read(user?.certData, user?.certFile),
    key: read(user?.keyData, user?.keyFile),
    rejectUnauthorized: !cluster?.skipTLSVerify,
  };
  // Each gateway's token, by connector: made at deploy, read back from its Secret after a restart of the service.
  const gatewayTokens = new Map<string, string>();
  async function gatewayToken(connectorId: string): Promise<string | undefined> {
    let token = gatewayTokens.get(connectorId);
    if (token === undefined) {
      const secret = await core.readNamespacedSecret({ name: tokenSecretName(connectorId), namespace }).catch(() => undefined);
      const data = secret?.data?.[GATEWAY_TOKEN_KEY];
      if (data === undefined) return undefined;
      token = Buffer.from(data, "base64").toString();
      gatewayTokens.set(connectorId, token);
    }
    return token;
  }
  const CONNECTOR_IN_URL = /cs-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/;
  const runtimeFetch: FetchLike = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const headers = new Headers(init?.headers);
    const connectorId = CONNECTOR_IN_URL.exec(url)?.[1];
    const token = connectorId && (await gatewayToken(connectorId));
    if (token) headers.set(GATEWAY_TOKEN_HEADER, token);
    if (options.access === "dns") return fetch(input, { ...init, headers });
    if (user?.token) headers.set("authorization", `Bearer ${user.token}`);
    return fetch(input, { ...init, headers, tls } as RequestInit);
  };

  return {
    driver: "kubernetes",
    async deploy(spec) {
      const token = randomBytes(32).toString("base64url");
      const manifests = buildManifests(spec, {
        namespace,
        gatewayImage: options.gatewayImage,
        gatewayToken: token,
        inputTimeoutMs: options.inputTimeoutMs,
      });
      const name = objectName(spec.connectorId);
      const secret = manifests.secret;
      await upsert(
        "Secret",
        secret,
        () => core.createNamespacedSecret({ namespace, body: secret }),
        () => core.readNamespacedSecret({ name: secret.metadata!.name!, namespace }),
        (b) => core.replaceNamespacedSecret({ name: secret.metadata!.name!, namespace, body: b }),
      );
      gatewayTokens.set(spec.connectorId, token);
      await upsert(
        "Deployment",
        manifests.deployment,
        () => apps.createNamespacedDeployment({ namespace, body: manifests.deployment }),
        () => apps.readNamespacedDeployment({ name, namespace }),
        (b) => apps.replaceNamespacedDeployment({ name, namespace, body: b }),
      );
      await upsert(
        "Service",
        manifests.service,
        () => core.createNamespacedService({ namespace, body: manifests.service }),
        () => core.readNamespacedService({ name, namespace }),
        (b) => core.replaceNamespacedService({ name, namespace, body: b }),
      );

      const until = clock() + readinessTimeoutMs;
      let state: DeploymentState = { ready: false, reason: "no ready replica" };
      while (clock() < until) {
        state = readiness(await apps.readNamespacedDeployment({ name, namespace }));
        if (state.ready) {
          log.info("managed deployment ready", { connector_id: spec.connectorId, deployment: name });
          return;
        }
        await sleep(options.pollMs ?? 1000);
      }
      await remove(spec.connectorId);
      throw new DeploymentFailed(
        `the Deployment ${name} was not ready within ${readinessTimeoutMs / 1000} s (${state.ready ? "" : state.reason})`,
        true,
      );
    },
    endpoint(connectorId) {
      const name = objectName(connectorId);
      if (options.access === "dns") return new URL(`http://${name}.${namespace}.svc:${GATEWAY_PORT}/mcp`);
      return new URL(`${cluster!.server.replace(/\/$/, "")}/api/v1/namespaces/${namespace}/services/${name}:mcp/proxy/mcp`);
    },
    fetch: runtimeFetch,
    remove,
    async list() {
      const deployments = await apps.listNamespacedDeployment({ namespace, labelSelector: selector });
      const states = new Map<string, DeploymentState>();
      for (const d of deployments.items) {
        const id = d.metadata?.labels?.[CONNECTOR_LABEL];
        if (id) states.set(id, readiness(d));
      }
      return states;
    },
    // Deployments outlive the service on purpose: the next start reconciles them.
    async close() {},
  };
}
