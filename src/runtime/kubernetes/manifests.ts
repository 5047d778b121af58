import type { V1Deployment, V1Secret, V1Service } from "@kubernetes/client-node";
import { DeploymentFailed, type DeploymentSpec } from "../runtime";

/** Labels naming what the service created; the last one selects a connector's objects. */
export const MANAGED_BY = "app.kubernetes.io/managed-by";
export const CONNECTOR_LABEL = "connector-service/connector-id";
export const GATEWAY_PORT = 8080;
const STDIO_DIR = "/stdio";
const TOKEN_KEY = "access-token";
/** The Secret's key for the gateway's token (gateway/token.ts). */
export const GATEWAY_TOKEN_KEY = "gateway-token";
const GATEWAY_TOKEN_ENV = "GATEWAY__TOKEN";
/** The service's own setting, given to the sidecar so that its parked calls wait as long as the service says. */
const INPUT_TIMEOUT_ENV = "PROXY__INPUT_TIMEOUT_SECONDS";

export const objectName = (connectorId: string) => `cs-${connectorId.toLowerCase()}`;
export const tokenSecretName = (connectorId: string) => `${objectName(connectorId)}-token`;

export type ManifestOptions = {
  namespace: string;
  gatewayImage: string;
  gatewayToken: string;
  /** How long the sidecar's parked calls wait for their retry (the service's PROXY__INPUT_TIMEOUT_SECONDS); its default unless said. */
  inputTimeoutMs?: number;
};
export type Manifests = { deployment: V1Deployment; service: V1Service; secret: V1Secret };

const labels = (connectorId: string) => ({
  "app.kubernetes.io/name": "mcp-server",
  "app.kubernetes.io/component": "managed-mcp-server",
  [MANAGED_BY]: "connector-service",
  [CONNECTOR_LABEL]: connectorId,
});

/** Both containers run as this non-root user (the service image's user) with nothing to escalate. */
const containerSecurity = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, runAsNonRoot: true };

/**
 * docs/interface.md §5: one Deployment with the MCP server and the gateway sidecar, and a Service exposing the
 * gateway on 8080. The sidecar reaches the server's stdio through two named pipes in a shared in-memory volume:
 * the server container runs `<command> < /stdio/in > /stdio/out` (so its image needs /bin/sh and mkfifo, and
 * the preset must give the command: an image's own entrypoint cannot be wrapped). No API access is needed by
 * either container, so no service-account token is mounted. A Secret holds the gateway's token (only the service
 * may use the gateway) and the access token (when the connect request gave one); neither is in the Deployment.
 */
export function buildManifests(spec: DeploymentSpec, options: ManifestOptions): Manifests {
  const command = [...(spec.stdio.command ?? []), ...(spec.stdio.args ?? [])];
  if (!spec.stdio.command?.length) {
    throw new DeploymentFailed(
      "the kubernetes driver needs the preset's stdio.command: the image's own entrypoint cannot be wrapped to use the gateway's pipes",
    );
  }
  const name = objectName(spec.connectorId);
  const meta = { name, namespace: options.namespace, labels: labels(spec.connectorId) };
  const tokenName = spec.stdio.access_token_env_name;
  const withAccessToken = spec.accessToken !== null && tokenName !== undefined;
  const secretName = tokenSecretName(spec.connectorId);
  const secret: V1Secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { ...meta, name: secretName },
    type: "Opaque",
    stringData: { [GATEWAY_TOKEN_KEY]: options.gatewayToken, ...(withAccessToken && { [TOKEN_KEY]: spec.accessToken! }) },
  };
  const fromSecret = (name: string, key: string) => ({ name, valueFrom: { secretKeyRef: { name: secretName, key } } });
  const env = [
    ...Object.entries(spec.stdio.env ?? {}).map(([k, v]) => ({ name: k, value: v })),
    ...(withAccessToken ? [fromSecret(tokenName!, TOKEN_KEY)] : []),
  ];
  const stdioMount = [{ name: "stdio", mountPath: STDIO_DIR }];
  const deployment: V1Deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta,
    spec: {
      replicas: 1,
      // One server process at a time: the sessions' state lives in it.
      strategy: { type: "Recreate" },
      selector: { matchLabels: { [CONNECTOR_LABEL]: spec.connectorId } },
      template: {
        metadata: { labels: labels(spec.connectorId) },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 10001,
            runAsGroup: 10001,
            fsGroup: 10001,
            seccompProfile: { type: "RuntimeDefault" },
          },
          volumes: [{ name: "stdio", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } }],
          containers: [
            {
              name: "mcp-server",
              image: spec.stdio.image,
              command: [
                "/bin/sh",
                "-c",
                `mkfifo ${STDIO_DIR}/in ${STDIO_DIR}/out 2>/dev/null; exec "$@" < ${STDIO_DIR}/in > ${STDIO_DIR}/out`,
                "mcp-server",
                ...command,
              ],
              env,
              volumeMounts: stdioMount,
              resources: { requests: { cpu: "50m", memory: "64Mi" }, limits: { cpu: "1", memory: "512Mi" } },
              securityContext: containerSecurity,
            },
            {
              name: "gateway",
              image: options.gatewayImage,
              args: ["gateway", "--port", String(GATEWAY_PORT), "--fifo", STDIO_DIR],
              env: [
                fromSecret(GATEWAY_TOKEN_ENV, GATEWAY_TOKEN_KEY),
                ...(options.inputTimeoutMs === undefined
                  ? []
                  : [{ name: INPUT_TIMEOUT_ENV, value: String(options.inputTimeoutMs / 1000) }]),
              ],
              ports: [{ name: "mcp", containerPort: GATEWAY_PORT }],
              // Ready once the server answered the gateway's initialize.
              readinessProbe: { httpGet: { path: "/healthz", port: GATEWAY_PORT }, periodSeconds: 2, failureThreshold: 3 },
              volumeMounts: stdioMount,
              resources: { requests: { cpu: "20m", memory: "48Mi" }, limits: { cpu: "500m", memory: "256Mi" } },
              securityContext: containerSecurity,
            },
          ],
        },
      },
    },
  };
  const service: V1Service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta,
    spec: {
      type: "ClusterIP",
      selector: { [CONNECTOR_LABEL]: spec.connectorId },
      ports: [{ name: "mcp", port: GATEWAY_PORT, targetPort: "mcp" }],
    },
  };
  return { deployment, service, secret };
}
