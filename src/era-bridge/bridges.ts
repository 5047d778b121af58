import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ConnectorRow } from "../connectors/repository";
import { isModernPost } from "../gateway/era";
import { loadModern } from "../gateway/load-modern";
import { readPostBody } from "../gateway/json-answers";
import { jsonRpcError } from "../gateway/json-rpc";
import { AppError, ServiceUnavailable, TooManyRequests, UpstreamFailed } from "../http-errors/errors";
import type { Logger } from "../observability/logger";
import type { Principal } from "../users/model";
import { answeredHere } from "../upstream/answered-here";
import type { Sealer } from "../secrets/sealer";
import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { ModernMessage } from "../gateway/modern";
import type { HandoffStore } from "./handoff-store";
import { createDirectSend } from "./direct-send";
import { createHandoffs, type RetryAnswer } from "./handoffs";
import { reopeningTransport } from "./reopening-transport";
import { openState, sealState } from "./request-state";

/** One MCP request of `caller` to a connector's proxy URL, through the proxy's own service (its governance applies). */
export type Hop = (caller: Principal, connectorId: string, request: Request) => Promise<Response>;

export type EraBridgeOptions = {
  hop: Hop;
  /** What the bridged MCP URLs are ("connectors", "virtual-servers"): the hop routes by id, the URL only names it. */
  kind: string;
  log: Logger;
  clock: () => number;
  /** A bridge no request used for this long is closed (its upstream session DELETEd). */
  idleMs?: number;
  /** Bridges kept at most (each holds an upstream session and its GET stream); beyond, the longest idle goes. */
  maxBridges?: number;
  /** Bridges of one user at most (one per connector or virtual server and credential); beyond, their longest idle goes. */
  maxPerUser?: number;
  /** How long a call whose server asked the client something waits for the client's retry (gateway/parked.ts). */
  inputTimeoutMs: number;
  /** Seals each parked call's `requestState` (request-state.ts). */
  sealer: Sealer;
  /** These bridges among the replicas sharing the store (this process and `kind`): a `requestState` names them. */
  holder: string;
  /**
   * Replicas on one PostgreSQL store: a retry whose call another replica holds is handed over to it (handoffs.ts).
   * None on SQLite (one process: a state naming another holder names a process that is gone).
   */
  handoffs?: { rows: HandoffStore; newId: () => string };
};

type SharedGateway = Awaited<ReturnType<typeof loadGateway>>;
type Bridge = { key: string; userId: string; gateway: Promise<SharedGateway>; lastUsed: number; opened?: SharedGateway };

const loadGateway = async (options: Parameters<typeof import("../gateway/shared").createSharedGateway>[0]) =>
  (await import("../gateway/shared")).createSharedGateway(options);

/** MCP 2026-07-28 InvalidParams: a retry whose `requestState` names no call waiting for input (gateway/parked.ts). */
const noCall = (id: string | number): RetryAnswer => ({
  jsonrpc: "2.0",
  id,
  error: { code: -32602, message: "requestState names no call waiting for input here" },
});

/**
 * A 2026-07-28 client in front of a server that speaks only the 2025 session era (docs/behaviour.md "Protocol eras";
 * MCP 2026-07-28 says these two cannot talk, and a gateway is where they can). Each caller of a connector gets one
 * bridge: the managed stdio gateway's shared code (gateway/shared.ts) over one 2025 session with the server, opened
 * through the proxy's own service as that caller — so credentials, refresh, tool policy, pinning and the audit trail
 * apply to what is sent — initialized once and opened again when the server forgets it (reopening-transport.ts). The
 * gateway gives each request a unique id on the shared session, answers `server/discover` from the initialize result,
 * reshapes results for 2026-07-28, serves `subscriptions/listen`, cancels upstream a request whose client went away,
 * and parks a call whose server asks the client something (elicitation, sampling, roots) until the client retries it.
 * The retry's sealed `requestState` (request-state.ts) names the replica holding the call: a retry that reached another
 * one is handed over to it through the store (handoffs.ts).
 */
export function createEraBridges({
  hop,
  kind,
  log,
  clock,
  idleMs = 5 * 60_000,
  maxBridges = 1000,
  maxPerUser = 100,
  inputTimeoutMs,
  sealer,
  holder,
  handoffs: handing,
}: EraBridgeOptions) {
  const bridges = new Map<string, Bridge>();
  const handoffs =
    handing &&
    createHandoffs({
      rows: handing.rows,
      holder,
      newId: handing.newId,
      clock,
      log: log.child({ component: "era-bridge" }),
      waitMs: inputTimeoutMs,
      holding: () => [...bridges.values()].some((bridge) => (bridge.opened?.parkedCalls() ?? 0) > 0),
      deliver: async (key, message, signal) => {
        const bridge = bridges.get(key);
        const gateway = await bridge?.gateway.catch(() => undefined);
        if (!bridge || !gateway) return noCall(message.id as string | number);
        bridge.lastUsed = clock();
        // Served as the holder serves a retry it got itself; the JSON answer, since no progress was asked.
        const request = new Request("http://bridge.invalid/", { method: "POST", signal });
        return (await (await gateway.serveModern(request, message as ModernMessage)).json()) as RetryAnswer;
      },
    });

  function open(caller: Principal, id: string, key: string): Bridge {
    const bridgeLog = log.child({ [kind === "connectors" ? "connector_id" : "virtual_server_id"]: id, component: "era-bridge" });
    const url = new URL(`http://bridge.invalid/api/v1/${kind}/${id}/mcp`);
    const gateway = (async () => {
      const server = reopeningTransport(() => {
        const transport: StreamableHTTPClientTransport = new StreamableHTTPClientTransport(url, {
          fetch: async (input, init) =>
            answeredHere(await hop(caller, id, new Request(input, init)), (message) => transport.onmessage?.(message)),
        });
        return transport;
      });
      const shared = await loadGateway({
        server,
        sendRequest: createDirectSend(url.href, (request) => hop(caller, id, request), server.session),
        log: bridgeLog,
        initTimeoutMs: 15_000,
        // The server may ask during a call; a 2026-07-28 client is asked through a parked call (gateway/parked.ts),
        // and one that did not declare what is asked is refused to the server then.
        offer: { elicitation: {}, sampling: {}, roots: {} },
        parkCalls: {
          timeoutMs: inputTimeoutMs,
          // Each requestState names this replica, and the retries of its calls that reach another are looked for.
          seal: (handle) => (handoffs?.watch(), sealState(sealer, key, { holder, handle })),
        },
      });
      try {
        await shared.ready();
      } catch (error) {
        await shared.close().catch(() => undefined);
        throw error;
      }
      return shared;
    })();
    const bridge: Bridge = { key, userId: caller.id, gateway, lastUsed: clock() };
    // A bridge that could not open is not kept: the next request tries again.
    gateway.then(
      (opened) => void (bridge.opened = opened),
      () => bridges.get(key) === bridge && bridges.delete(key),
    );
    return bridge;
  }

  /**
   * Makes room for one more bridge of `userId`: at most `maxPerUser` each (one user never pushes out everyone
   * else's), then at most `maxBridges` in all; the longest idle bridge with nothing in flight is closed first.
   */
  async function makeRoom(userId: string): Promise<void> {
    const mine = [...bridges.values()].filter((b) => b.userId === userId);
    if (mine.length >= maxPerUser && !(await closeIdlest(mine)))
      throw new TooManyRequests(
        `You have ${mine.length} 2026-07-28 bridges busy here (at most ${maxPerUser} per user); try again shortly`,
        5,
      );
    if (bridges.size < maxBridges) return;
    if (!(await closeIdlest([...bridges.values()])))
      throw new ServiceUnavailable(`Too many 2026-07-28 bridges in use (at most ${maxBridges}); try again shortly`);
  }

  /** Closes the longest idle of `candidates` that has nothing in flight; false if every one is busy. */
  async function closeIdlest(candidates: Bridge[]): Promise<boolean> {
    const idle = candidates.sort((a, b) => a.lastUsed - b.lastUsed);
    for (const bridge of idle) {
      const gateway = await bridge.gateway.catch(() => undefined);
      if (gateway && gateway.pendingRequests() > 0) continue;
      close(bridge);
      return true;
    }
    return false;
  }

  function close(bridge: Bridge) {
    bridges.delete(bridge.key);
    void bridge.gateway.then((g) => g.close()).catch(() => undefined);
  }

  const sweep = setInterval(
    () => {
      const now = clock();
      for (const bridge of bridges.values()) {
        if (now - bridge.lastUsed < idleMs) continue;
        void bridge.gateway
          .then((g) => g.pendingRequests() === 0 && bridges.get(bridge.key) === bridge && close(bridge))
          .catch(() => undefined);
      }
    },
    Math.min(idleMs, 60_000),
  );
  sweep.unref?.();

  /**
   * A retry of a parked call (its `requestState` a string): served here when this replica holds the call, handed over
   * to the one that holds it, or answered -32602 when the state names no call of this caller.
   */
  async function retry(sent: JSONRPCRequest, state: string, key: string, request: Request): Promise<Response> {
    const parked = openState(sealer, key, state);
    if (!parked) return Response.json(noCall(sent.id));
    const message = { ...sent, params: { ...sent.params, requestState: parked.handle } };
    if (parked.holder !== holder) return handOver(parked.holder, key, message, request.signal);
    const bridge = bridges.get(key);
    const gateway = await bridge?.gateway.catch(() => undefined);
    if (!bridge || !gateway) return Response.json(noCall(sent.id));
    bridge.lastUsed = clock();
    return gateway.serveModern(request, message);
  }

  /** A retry whose call `to` holds: handed over, and its answer as JSON (no progress of another replica's call comes). */
  async function handOver(to: string, key: string, message: JSONRPCRequest, signal: AbortSignal) {
    if (!handoffs) return Response.json(noCall(message.id));
    const meta = message.params?._meta as Record<string, unknown> | undefined;
    const { progressToken: _, ...rest } = meta ?? {};
    const answer = await handoffs.handOver(to, key, { ...message, params: { ...message.params, _meta: rest } }, signal);
    return answer ? Response.json({ ...answer, id: message.id }) : new Response(null, { status: 499 });
  }

  return {
    /**
     * Whether `request` is a 2026-07-28 POST (SEP-2243: such a request always names its revision in
     * `MCP-Protocol-Version`) for a connector whose server is known not to speak that revision. A connector whose
     * revisions are unknown (connected before they were recorded) is relayed as it always was.
     */
    wants(row: ConnectorRow, request: Request): boolean {
      if (!row.protocol_versions || !isModernPost(request)) return false;
      return !row.protocol_versions.includes(request.headers.get("mcp-protocol-version")!);
    },

    /** Serves one 2026-07-28 request of `caller` over the caller's bridge to MCP URL `id` (its 2025 sessions). */
    async serve(caller: Principal, id: string, request: Request): Promise<Response> {
      const body = await readPostBody(request);
      if (body === undefined) return jsonRpcError(415, "Unsupported Media Type: Content-Type must be application/json");
      if ("refused" in body) return body.refused;
      const { classifyPost } = await loadModern();
      const era = classifyPost(body.parsed, request.headers);
      if (era.era === "refused") return era.response;
      // A modern header on a 2025 body is refused by classifyPost; this is the same answer for anything left.
      if (era.era === "legacy")
        return jsonRpcError(400, "Bad Request: a 2026-07-28 request must carry its envelope in _meta", -32020);
      // Everything the caller's access depends on: a bridge opened as one identity never serves another (a token bound
      // to another resource, a demoted administrator).
      const key = JSON.stringify([
        id,
        caller.id,
        caller.role,
        caller.credential ?? null,
        caller.connector ?? null,
        caller.boundVirtualServer ?? null,
        caller.virtualServer ?? null,
      ]);
      const state = (era.message.params as { requestState?: unknown } | undefined)?.requestState;
      if ("id" in era.message && typeof state === "string") return retry(era.message, state, key, request);
      let bridge = bridges.get(key);
      if (!bridge) {
        await makeRoom(caller.id);
        bridge = bridges.get(key) ?? open(caller, id, key);
        bridges.set(key, bridge);
      }
      bridge.lastUsed = clock();
      let gateway: SharedGateway;
      try {
        gateway = await bridge.gateway;
      } catch (error) {
        // Refused as the caller (no such MCP URL, not connected): the same answer as a 2025 client gets.
        if (error instanceof AppError) throw error;
        throw new UpstreamFailed(
          `This 2026-07-28 request is served over a 2025 session, which could not be opened: ${(error as Error).message}`,
        );
      }
      return gateway.serveModern(request, era.message);
    },

    /** Bridges open now. */
    size: () => bridges.size,

    /** Ends every bridge's upstream session (at shutdown). */
    async closeAll(): Promise<void> {
      clearInterval(sweep);
      const all = [...bridges.values()];
      bridges.clear();
      await Promise.allSettled(all.map((b) => b.gateway.then((g) => g.close())));
    },
  };
}
export type EraBridges = ReturnType<typeof createEraBridges>;
