import {
  SUBSCRIPTION_ID_META_KEY,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type ServerCapabilities,
  type SubscriptionFilter,
  type Transport,
} from "@modelcontextprotocol/server";

type Id = string | number;
type Notification = { method: string; params?: Record<string, unknown> };

/** One open `subscriptions/listen` stream: its request's id, where its notifications go, what it was promised. */
type Listener = { id: Id; via: Pick<Transport, "send">; honored: SubscriptionFilter; counted: string[] };

export type ListenRouterOptions = {
  /** The server's capabilities (from its one initialize): what a listener can be promised at all. */
  capabilities: () => ServerCapabilities;
  /** Sends a request of the gateway's own to the server; resolves true if it succeeded. */
  ask: (method: string, params: Record<string, unknown>) => Promise<boolean>;
};

/** Which filter flag a list-change notification answers to. */
const LIST_CHANGED: Record<string, keyof SubscriptionFilter> = {
  "notifications/tools/list_changed": "toolsListChanged",
  "notifications/prompts/list_changed": "promptsListChanged",
  "notifications/resources/list_changed": "resourcesListChanged",
};

/**
 * MCP 2026-07-28 `subscriptions/listen` (schema `SubscriptionsListenRequest`: it replaces the GET stream and
 * `resources/subscribe`) over a legacy server's one session: each listen stream gets
 * `notifications/subscriptions/acknowledged` first (what it was promised: the kinds it asked for that the server's
 * capabilities offer, and the resources the server agreed to), then the server's list changes and resource updates
 * that match, each tagged with the stream's subscription id (`io.modelcontextprotocol/subscriptionId`, the listen
 * request's id). The server itself sees one `resources/subscribe` per URI however many streams want it, and
 * `resources/unsubscribe` when the last of them closes.
 */
export function createListenRouter({ capabilities, ask }: ListenRouterOptions) {
  const listeners = new Set<Listener>();
  /** URI → how many open streams asked for it, and whether the server agreed to the one subscribe it was sent. */
  const subscribed = new Map<string, { count: number; agreed: Promise<boolean> }>();

  function subscribe(uri: string): Promise<boolean> {
    const known = subscribed.get(uri);
    if (known) {
      known.count++;
      return known.agreed;
    }
    const agreed = ask("resources/subscribe", { uri }).catch(() => false);
    subscribed.set(uri, { count: 1, agreed });
    return agreed;
  }

  function unsubscribe(uri: string) {
    const known = subscribed.get(uri);
    if (!known || --known.count > 0) return;
    subscribed.delete(uri);
    void ask("resources/unsubscribe", { uri }).catch(() => undefined);
  }

  const tagged = (message: Notification, id: Id) =>
    ({
      jsonrpc: "2.0",
      ...message,
      params: { ...message.params, _meta: { ...(message.params?._meta as object), [SUBSCRIPTION_ID_META_KEY]: id } },
    }) as JSONRPCMessage;

  return {
    /** Opens a listen stream on `via` (the request's own transport) and acknowledges it. */
    async open(message: JSONRPCRequest, via: Pick<Transport, "send">) {
      const asked = ((message.params as { notifications?: SubscriptionFilter } | undefined)?.notifications ??
        {}) as SubscriptionFilter;
      const caps = capabilities();
      const honored: SubscriptionFilter = {};
      if (asked.toolsListChanged && caps.tools?.listChanged) honored.toolsListChanged = true;
      if (asked.promptsListChanged && caps.prompts?.listChanged) honored.promptsListChanged = true;
      if (asked.resourcesListChanged && caps.resources?.listChanged) honored.resourcesListChanged = true;
      const uris = caps.resources?.subscribe ? [...new Set(asked.resourceSubscriptions ?? [])] : [];
      const listener: Listener = { id: message.id, via, honored, counted: uris };
      listeners.add(listener);
      const agreed = await Promise.all(uris.map(subscribe));
      if (uris.length > 0) honored.resourceSubscriptions = uris.filter((_, i) => agreed[i]);
      if (!listeners.has(listener)) return; // the client went away meanwhile
      await via
        .send(tagged({ method: "notifications/subscriptions/acknowledged", params: { notifications: honored } }, message.id), {
          relatedRequestId: message.id,
        })
        .catch(() => undefined);
    },
    /** The stream of `via` closed (the client went away, or the gateway ended it). */
    closed(via: Pick<Transport, "send">) {
      for (const listener of listeners) {
        if (listener.via !== via) continue;
        listeners.delete(listener);
        for (const uri of listener.counted) unsubscribe(uri);
      }
    },
    /** A notification of the server not tied to a request: to every stream promised it. */
    deliver(message: Notification) {
      const flag = LIST_CHANGED[message.method];
      const uri = message.method === "notifications/resources/updated" ? message.params?.uri : undefined;
      for (const listener of listeners) {
        const wants = flag
          ? listener.honored[flag] === true
          : uri !== undefined && listener.honored.resourceSubscriptions?.includes(uri as string);
        if (wants) void listener.via.send(tagged(message, listener.id), { relatedRequestId: listener.id }).catch(() => undefined);
      }
    },
    /** Ends every stream gracefully (MCP 2026-07-28: the empty `subscriptions/listen` result, e.g. at shutdown). */
    endAll(result: (id: Id) => Record<string, unknown>) {
      for (const listener of listeners)
        void listener.via
          .send({ jsonrpc: "2.0", id: listener.id, result: result(listener.id) } as JSONRPCMessage)
          .catch(() => undefined);
      listeners.clear();
    },
    size: () => listeners.size,
  };
}
