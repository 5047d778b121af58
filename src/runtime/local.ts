import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Server } from "bun";
import { randomBytes } from "node:crypto";
import { createGateway, type SessionGateway } from "../gateway/gateway";
import { GATEWAY_TOKEN_HEADER } from "../gateway/token";
import type { StdioCommand } from "../gateway/session";
import type { Logger } from "../observability/logger";
import { describeHandshake, mcpHandshake } from "../upstream/handshake";
import type { ProcessLimits, Release } from "./process-limits";
import { DeploymentFailed, READINESS_TIMEOUT_MS, serverEnv, type DeploymentSpec, type Runtime } from "./runtime";
import { sandboxed, type Sandbox } from "./sandbox";

type Deployment = { gateway: SessionGateway; server: Server<undefined>; url: URL; token: string };

export type LocalRuntimeOptions = {
  log: Logger;
  /** RUNTIME__SANDBOX as chosen at start (sandbox.ts). */
  sandbox: Sandbox;
  /** RUNTIME__MAX_PROCESSES_PER_USER and RUNTIME__MAX_PROCESSES. */
  limits: ProcessLimits;
  readinessTimeoutMs?: number;
  /** How long a 2026-07-28 client's call parked for input waits for its retry (PROXY__INPUT_TIMEOUT_SECONDS). */
  inputTimeoutMs?: number;
  /** Looks a program up on PATH (injectable for tests). */
  which?: (program: string) => string | null;
};

/**
 * The `local` driver: each connector gets an in-process gateway on a loopback port; each MCP session
 * through it runs its own server process (see gateway/session.ts). Processes get only a minimal
 * environment (PATH, HOME, …) plus the preset's env and the access token, never the service's own
 * settings, and end with their session, the deployment, or the service. A gateway answers only requests that carry
 * its deployment's token (another user of the machine could otherwise reach the loopback port). Each process runs in
 * the sandbox (sandbox.ts) and holds one of its owner's places (process-limits.ts) while it runs.
 */
export function createLocalRuntime({
  log,
  sandbox,
  limits,
  readinessTimeoutMs = READINESS_TIMEOUT_MS,
  inputTimeoutMs,
  which = Bun.which,
}: LocalRuntimeOptions): Runtime {
  const deployments = new Map<string, Deployment>();
  const byOrigin = new Map<string, Deployment>(); // gateway origin → its deployment (for fetch)

  /**
   * The preset's command in the sandbox, or its image through podman/docker when it gives only an image (the
   * container is its sandbox: the engine needs the user's storage and sockets, which bwrap would hide).
   */
  function commandFor(spec: DeploymentSpec): StdioCommand {
    const env = { ...getDefaultEnvironment(), ...serverEnv(spec) };
    const { command, args = [], image } = spec.stdio;
    if (command && command.length > 0)
      return sandboxed(sandbox, { command: command[0]!, args: [...command.slice(1), ...args], env });
    const engine = ["podman", "docker"].find((name) => which(name));
    if (!engine) {
      throw new DeploymentFailed(`the preset gives only the image ${image}, and neither podman nor docker is on PATH to run it`);
    }
    const passEnv = Object.keys(serverEnv(spec)).flatMap((name) => ["-e", name]);
    return { command: engine, args: ["run", "-i", "--rm", ...passEnv, image, ...args], env };
  }

  async function remove(connectorId: string): Promise<void> {
    const deployment = deployments.get(connectorId);
    if (!deployment) return;
    deployments.delete(connectorId);
    byOrigin.delete(deployment.url.origin);
    await deployment.gateway.close();
    await deployment.server.stop(true);
  }

  return {
    driver: "local",
    async deploy(spec) {
      // The readiness handshake's process is the owner's too: its place is taken first (a 429 then changes nothing),
      // and given to the first session the gateway starts, which is the handshake's (no one else knows the gateway yet).
      let reserved: Release | undefined = limits.take(spec.ownerId);
      const admit = () => {
        const place = reserved ?? limits.take(spec.ownerId);
        reserved = undefined;
        return place;
      };
      try {
        await remove(spec.connectorId);
        const stdio = commandFor(spec);
        const token = randomBytes(32).toString("base64url");
        const gateway = createGateway({
          stdio,
          log: log.child({ connector_id: spec.connectorId }),
          token,
          admit,
          inputTimeoutMs,
        });
        const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: gateway.fetch });
        const url = new URL(`http://127.0.0.1:${server.port}/mcp`);
        // Ready means a real MCP handshake with a fresh server process succeeds (its session is then ended).
        const result = await mcpHandshake(url, {
          fetch,
          headers: { [GATEWAY_TOKEN_HEADER]: token },
          timeoutMs: readinessTimeoutMs,
        });
        if (!result.ok) {
          await gateway.close();
          await server.stop(true);
          throw new DeploymentFailed(
            `the stdio server (${spec.stdio.command?.[0] ?? stdio.command}) did not become ready: ${describeHandshake(result)}`,
            result.kind === "timeout",
          );
        }
        deployments.set(spec.connectorId, { gateway, server, url, token });
        byOrigin.set(url.origin, deployments.get(spec.connectorId)!);
      } finally {
        reserved?.();
      }
    },
    endpoint: (connectorId) => deployments.get(connectorId)?.url,
    fetch(input, init) {
      const url = new URL(input instanceof Request ? input.url : input);
      const headers = new Headers(init?.headers);
      const deployment = byOrigin.get(url.origin);
      if (!deployment) return fetch(input, { ...init, headers });
      headers.set(GATEWAY_TOKEN_HEADER, deployment.token);
      // The gateway runs in this process: hand it the request directly instead of a second HTTP hop over loopback
      // (bench/RESULTS.md, "Managed stdio throughput"). Aborts and body streams pass as they would over the socket.
      return deployment.gateway.fetch(new Request(input, { ...init, headers }));
    },
    remove,
    // A gateway whose server keeps exiting before it answers is not ready: reconciliation disconnects the connector
    // if that lasts (deployments/service.ts), as it does a Kubernetes pod in a crash loop.
    list: async () => new Map([...deployments].map(([id, deployment]) => [id, deployment.gateway.health()])),
    async close() {
      await Promise.allSettled([...deployments.keys()].map(remove));
    },
  };
}
