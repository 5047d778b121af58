import type { FetchLike } from "../http/fetch";
import type { Preset } from "../presets/model";

/** What a managed stdio connector runs: its preset's stdio configuration and the connect request's token. */
export type DeploymentSpec = {
  connectorId: string;
  /** The connector's owner: its server processes count toward this user's cap (local driver). */
  ownerId: string;
  stdio: NonNullable<Preset["stdio"]>;
  accessToken: string | null;
};

/** Why a deployment could not be made ready; becomes the connector's disconnect_reason. */
export class DeploymentFailed extends Error {
  constructor(
    message: string,
    readonly timedOut = false,
  ) {
    super(message);
  }
}

export type DeploymentState = { ready: true } | { ready: false; reason: string };

/** A managed deployment has up to 60 s to become ready (docs/interface.md §5). */
export const READINESS_TIMEOUT_MS = 60_000;

/**
 * Where managed stdio MCP servers run (RUNTIME__DRIVER): `local` child processes, or Kubernetes.
 * `deploy` replaces any deployment of the connector (connect is idempotent) and resolves once it serves MCP.
 */
export type Runtime = {
  readonly driver: "local" | "kubernetes";
  deploy(spec: DeploymentSpec): Promise<void>;
  /** The MCP endpoint the proxy forwards to (local: while the deployment exists). */
  endpoint(connectorId: string): URL | undefined;
  /** How to reach endpoints: they are the service's own, so not through the URL guard; may add credentials. */
  fetch: FetchLike;
  /** Removes everything the deployment created; nothing to do when there is none. */
  remove(connectorId: string): Promise<void>;
  /** Every deployment this service made that exists now, by connector id, and whether it serves. */
  list(): Promise<Map<string, DeploymentState>>;
  /** Removes every deployment (service shutdown, for drivers whose deployments die with the process). */
  close(): Promise<void>;
};

/** The environment a managed server gets: the preset's, plus the access token under its configured name. */
export function serverEnv(spec: DeploymentSpec): Record<string, string> {
  const env = { ...(spec.stdio.env ?? {}) };
  if (spec.accessToken !== null && spec.stdio.access_token_env_name) env[spec.stdio.access_token_env_name] = spec.accessToken;
  return env;
}
