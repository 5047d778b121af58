import { TooManyRequests } from "../http-errors/errors";

export type StreamLimitOptions = {
  /** PROXY__MAX_STREAMS_PER_USER. */
  perUser: number;
  /** PROXY__MAX_STREAMS_PER_CONNECTOR. */
  perConnector: number;
};

/**
 * How many proxied exchanges may be open at once — a request waiting for its answer, an event stream being relayed —
 * per user and per connector. Each holds a connection upstream for as long as it lasts, so without a cap one user's
 * idle clients could take every connection the process has. Beyond a cap: 429.
 */
export function createStreamLimits({ perUser, perConnector }: StreamLimitOptions) {
  const users = new Map<string, number>();
  const connectors = new Map<string, number>();
  const add = (counts: Map<string, number>, key: string, by: number) => {
    const next = (counts.get(key) ?? 0) + by;
    if (next === 0) counts.delete(key);
    else counts.set(key, next);
  };
  return {
    /** Takes a place for one exchange; the function returned gives it back (once, however often it is called). */
    open(userId: string, connectorId: string): () => void {
      if ((users.get(userId) ?? 0) >= perUser) {
        throw new TooManyRequests(
          `You have ${perUser} MCP requests and streams open through the proxy (PROXY__MAX_STREAMS_PER_USER): close some first`,
          5,
        );
      }
      if ((connectors.get(connectorId) ?? 0) >= perConnector) {
        throw new TooManyRequests(
          `This connector has ${perConnector} MCP requests and streams open (PROXY__MAX_STREAMS_PER_CONNECTOR): close some first`,
          5,
        );
      }
      add(users, userId, 1);
      add(connectors, connectorId, 1);
      let open = true;
      return () => {
        if (!open) return;
        open = false;
        add(users, userId, -1);
        add(connectors, connectorId, -1);
      };
    },
    /** Open exchanges now, for a user and for a connector. */
    count: (userId: string, connectorId: string) => ({
      user: users.get(userId) ?? 0,
      connector: connectors.get(connectorId) ?? 0,
    }),
  };
}
export type StreamLimits = ReturnType<typeof createStreamLimits>;
