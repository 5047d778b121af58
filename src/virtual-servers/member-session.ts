import { AsyncLocalStorage } from "node:async_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { RequestHandlerExtra, RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ResultSchema,
  ToolListChangedNotificationSchema,
  type ClientCapabilities,
  type ClientNotification,
  type ClientRequest,
  type JSONRPCMessage,
  type LoggingLevel,
  type Progress,
  type Result,
  type ServerCapabilities,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { eventTap } from "../http/server-sent-events";
import { VERSION } from "../version";
import type { Cancellation } from "./cancellation";
import { INTERNAL_ERROR } from "./jsonrpc";
import { sendPlain, type PlainSession } from "./plain-request";
import type { Channel, Relay } from "./relay";
import type { StoredUpstream } from "./session-store";
import { injectSpan } from "./trace-context";

/**
 * How a virtual server reaches a member: one MCP request of the caller to the member connector's proxy URL, through
 * the proxy's own service (app.ts wires `proxy.handle`), so its admission, credentials, refresh, tool policy, pinning
 * and audit apply as they do at /api/v1/connectors/{id}/mcp. It may throw the proxy's problems (a member that is not
 * connected: 409).
 */
export type MemberExchange = (connectorId: string, request: Request) => Promise<Response>;

/** Any result, its members kept (built once: zod compiles a schema on first use, which cost more than the call). */
const ANY_RESULT = ResultSchema.passthrough();

/**
 * The SDK client's JSON Schema validator, one for every member session: a client builds an Ajv instance of its own
 * otherwise, 11 of the 14 KiB a client holds. The SDK uses it only for listTools' output schemas, which these clients
 * never call (they send tools/list as a request), so one shared is never more than a constant.
 */
const VALIDATOR = new AjvJsonSchemaValidator();

/** The lists whose changes a member announces (MCP 2025-11-25 server/tools, server/prompts, server/resources). */
export type ChangedList = "tools" | "prompts" | "resources";

/** What a member session needs of its client session: what the client offers, and where the member's messages go. */
export type MemberPeer = {
  /** What the virtual server's client declared at initialize: elicitation, sampling and roots are offered on. */
  capabilities: ClientCapabilities;
  /** The client session's GET stream, while it is open. */
  stream(): Channel | undefined;
  relay: Relay;
  listChanged(list: ChangedList): void;
  resourceUpdated(params: Record<string, unknown>): void;
  /** The level the client set (logging/setLevel), if it did: a member opened later is told it too. */
  logLevel(): LoggingLevel | undefined;
  /** A member's log message (server/utilities/logging), for the client. */
  log(params: Record<string, unknown>): void;
};

/** A client's call being served by the member: where the member's requests during it go. */
export type CallContext = { channel: Channel };

/**
 * The call each request to a member is made for. The SDK reads a POST's event stream in the asynchronous context of
 * the request that sent it, so a member's request arriving on that stream — one related to the call (basic/
 * transports "Sending Messages to the Server") — finds its call here; one on the GET stream finds none. One for all
 * member sessions (a context is per request, not per session): one each cost memory in every upstream session.
 */
const calls = new AsyncLocalStorage<CallContext>();

/**
 * The SDK client's request being sent, given up with `why` when the member's event stream for it ends before its
 * answer and cannot be resumed (no event id): the SDK would wait for it until its timeout (found by review: a member
 * going down during a call with progress left the client without an answer for 60 s). Found as `calls` is.
 */
const sdkRequests = new AsyncLocalStorage<SdkRequest>();
/** `broken`: gives the request up; `settled`: aborted once it is over (its stream is not watched any longer). */
type SdkRequest = { broken: (why: Error) => void; settled: AbortSignal };

const isAnswer = (data: string | undefined, id: unknown): boolean => {
  if (!data) return false;
  try {
    const message = JSON.parse(data) as Record<string, unknown>;
    return message.id === id && ("result" in message || "error" in message);
  } catch {
    return false;
  }
};

/** Any URL: the exchange routes by connector id, never by URL. */
const memberUrl = (connectorId: string) => new URL(`http://member.invalid/api/v1/connectors/${connectorId}/mcp`);

/**
 * `promise`, or the cancellation's reason as soon as it is cancelled (what is waited for goes on, for whoever waits
 * next): a session's opening shared by several requests is given up by each on its own bound.
 */
function until<T>(promise: Promise<T>, cancel: Cancellation | undefined): Promise<T> {
  if (!cancel) return promise;
  const reasonOf = () =>
    cancel.reason instanceof Error ? cancel.reason : new McpError(ErrorCode.RequestTimeout, String(cancel.reason));
  if (cancel.aborted) return Promise.reject(reasonOf());
  return new Promise<T>((resolve, reject) => {
    const forget = cancel.onAbort(() => reject(reasonOf()));
    promise.then(
      (value) => (forget(), resolve(value)),
      (error: unknown) => (forget(), reject(error)),
    );
  });
}

/**
 * The one upstream session a client session holds with one member (issue 24 item 5): opened lazily, on the member's
 * first request, by the SDK client (MCP 2025-11-25 basic/lifecycle: initialize, then notifications/initialized) and
 * reused for every later request of the client session. A member that forgot it (basic/transports "Session
 * Management": 404 for an unknown Mcp-Session-Id) gets a new one, once, transparently.
 */
export function openMemberSession(
  exchange: MemberExchange,
  connectorId: string,
  peer: MemberPeer,
  /**
   * `resume`: the upstream session another replica opened (session-store.ts), gone on in without a second initialize;
   * `remember`: told of each session opened here, for the other replicas; awaited before the session is used, so a
   * request the client sends next to another replica finds it there.
   */
  store: {
    resume?: () => Promise<StoredUpstream | undefined>;
    remember?: (upstream: StoredUpstream) => Promise<void> | void;
  } = {},
) {
  /** Asked once, when the session first opens: a session the member forgot (404) is opened afresh, like any other. */
  let resume = store.resume;
  /** What a resumed session's member declared when another replica opened it (this SDK client never saw it). */
  let resumedCapabilities: ServerCapabilities | undefined;
  let opening: Promise<{ client: Client; transport: StreamableHTTPClientTransport }> | undefined;
  let opened: { client: Client; transport: StreamableHTTPClientTransport } | undefined;
  /** `opened` once its opening is over (the client's log level told): what a request may go on without waiting. */
  let ready: typeof opened;
  /** Ended with its client session (or its member's leaving): nothing is opened in it again. */
  let closed = false;
  const serving = new Set<CallContext>();
  /** Ends the member's GET stream, while one is open. */
  let listening: (() => void) | undefined;
  /** The last event id on the member's GET stream: a GET resuming from it resumes that stream. */
  let getEventId: string | undefined;

  /**
   * basic/transports "Listening for Messages from the Server": the member's GET stream is held open only while the
   * client holds its own; otherwise it is answered 405, as a server without one would, which the SDK accepts. The SDK
   * reconnects a GET stream that ends, and is answered 405 once the client's has gone.
   */
  async function openGetStream(request: Request): Promise<Response> {
    const refused = () => new Response(null, { status: 405, headers: { allow: "POST, DELETE" } });
    if (!peer.stream() || listening) return refused();
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let stopped = false;
    const stop = () => {
      stopped = true;
      if (listening === stop) listening = undefined;
      void reader?.cancel().catch(() => {});
    };
    listening = stop;
    let response: Response;
    try {
      response = await exchange(connectorId, request);
    } catch (error) {
      stop();
      throw error;
    }
    if (!response.ok) {
      stop();
      return response;
    }
    // The client's stream ended while the member's was being opened.
    if (!response.body || stopped) {
      stop();
      await response.body?.cancel().catch(() => {});
      return refused();
    }
    const upstream = (reader = response.body.getReader());
    // Its event ids, as the SDK reading the stream takes them (the last one is what it resumes from).
    const noteIds = eventTap((event) => {
      if (event.id !== undefined) getEventId = event.id;
    });
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const chunk = await upstream.read().catch(() => ({ done: true as const, value: undefined }));
        if (!chunk.done) {
          noteIds(chunk.value);
          return controller.enqueue(chunk.value);
        }
        stop();
        controller.close();
      },
      cancel: stop,
    });
    return new Response(body, { status: response.status, headers: response.headers });
  }

  /**
   * A POST of the SDK client's request (`broken`: its giving up): an event stream that ends, or breaks, before the
   * request's answer and without an event id to resume from gives the request up, as a plain request's is.
   */
  async function watched(request: Request, { broken, settled }: SdkRequest): Promise<Response> {
    const message = (await request
      .clone()
      .json()
      .catch(() => undefined)) as { id?: unknown; method?: unknown } | undefined;
    const response = await exchange(connectorId, request);
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (!response.body || type !== "text/event-stream" || message?.id === undefined || message.method === undefined)
      return response;
    const [mine, theirs] = response.body.tee();
    const reader = mine.getReader();
    // Read until the answer, or the request is over: then this copy is let go (the SDK reads on in its own).
    const stop = () => void reader.cancel().catch(() => {});
    settled.addEventListener("abort", stop, { once: true });
    void (async () => {
      let resumable = false;
      let answered = false;
      const feed = eventTap((event) => {
        if (event.id !== undefined) resumable = true;
        if (isAnswer(event.data, message.id)) answered = true;
      });
      let why = "The member's event stream ended before its answer";
      try {
        for (let chunk = await reader.read(); !chunk.done && !answered; chunk = await reader.read()) feed(chunk.value);
      } catch (error) {
        why += `: ${error instanceof Error ? error.message : String(error)}`;
      }
      settled.removeEventListener("abort", stop);
      stop();
      if (!answered && !resumable && !settled.aborted) broken(new Error(why));
    })();
    return new Response(theirs, { status: response.status, headers: response.headers });
  }

  const fetch = (input: string | URL | Request, init?: RequestInit) => sendOne(new Request(input, init));
  function sendOne(request: Request): Promise<Response> {
    injectSpan(request);
    // basic/transports "Resumability": a GET with Last-Event-ID resumes a POST's stream, or the GET stream itself (the
    // SDK resumes the GET stream after it ends, from its last event): that one listens, as any other GET does (found
    // by review: it went on to the member unchecked, and stayed open after the client's stream had gone).
    if (request.method === "GET") {
      const resumed = request.headers.get("last-event-id");
      if (resumed === null || resumed === getEventId) return openGetStream(request);
    }
    const broken = request.method === "POST" ? sdkRequests.getStore() : undefined;
    if (broken) return watched(request, broken);
    return exchange(connectorId, request);
  }
  /**
   * The open session as a plain request needs it (plain-request.ts), made once per opened session: the request it
   * sends is cloned from one kept with it (upstream/session-post.ts), which is made again when the session's id or
   * version changes.
   */
  let plain: { client: Client; session: PlainSession } | undefined;
  function plainSession(client: Client, transport: StreamableHTTPClientTransport): PlainSession {
    if (plain?.client === client) return plain.session;
    const session: PlainSession = {
      url: memberUrl(connectorId).href,
      // As the transport has them now (a resumed session's version is set after it opens).
      get sessionId() {
        return transport.sessionId;
      },
      get protocolVersion() {
        return transport.protocolVersion;
      },
      // A plain request's POST (or the GET resuming its stream): never the GET stream to hold, nor an SDK client's request
      // to watch (sendOne).
      fetch: (request) => {
        injectSpan(request);
        return exchange(connectorId, request);
      },
      deliver: (message) => transport.onmessage?.(message),
      cancel: (requestId, reason) =>
        void client.notification({ method: "notifications/cancelled", params: { requestId, reason } }).catch(() => {}),
    };
    plain = { client, session };
    return session;
  }
  /** The ids of the requests sent without the SDK client: strings, never one of its numbers in the same session. */
  let plainIds = 0;

  /**
   * A member's request to the client (client/elicitation, client/sampling, client/roots), relayed on the stream of
   * the call it came with; one that came on the GET stream goes with the member's one call in flight if it has just
   * one (a server may send a call's requests there), else on the client's GET stream.
   */
  async function relay(
    request: { method: string; params?: Record<string, unknown> },
    extra: RequestHandlerExtra<ClientRequest, ClientNotification>,
  ): Promise<Result> {
    const call = calls.getStore() ?? (serving.size === 1 ? [...serving][0] : undefined);
    const channel = call?.channel ?? peer.stream();
    if (!channel) throw new McpError(INTERNAL_ERROR, `No client stream can carry ${request.method} now`);
    const token = (request.params?._meta as { progressToken?: string | number } | undefined)?.progressToken;
    return peer.relay.ask(channel, request.method, request.params, {
      signal: extra.signal,
      ...(call && { stream: peer.stream }),
      ...(token !== undefined && {
        onprogress: (progress: Progress) =>
          void extra.sendNotification({ method: "notifications/progress", params: { ...progress, progressToken: token } }),
      }),
    });
  }

  function open(timeout: number) {
    // A request still under way when the session was closed (a listing's next page, a request sent again after the
    // member's 404 to it) opens no session that nothing would end (found by review).
    if (closed)
      return Promise.reject(new Error("its session was ended (the client session ended, or it left the virtual server)"));
    // Opened outside any call: the GET stream the SDK starts now belongs to none.
    opening ??= calls.exit(async () => {
      const stored = await resume?.().catch(() => undefined);
      resume = undefined;
      const resumed = stored?.sessionId === undefined ? undefined : stored;
      const transport = new StreamableHTTPClientTransport(memberUrl(connectorId), {
        fetch,
        ...(resumed && { sessionId: resumed.sessionId }),
      });
      // basic/lifecycle "Capability Negotiation": the member is offered what the client offers, nothing more.
      const { elicitation, sampling, roots } = peer.capabilities;
      const client = new Client(
        { name: "connector-service virtual server", version: VERSION },
        {
          capabilities: { ...(elicitation && { elicitation }), ...(sampling && { sampling }), ...(roots && { roots }) },
          jsonSchemaValidator: VALIDATOR,
        },
      );
      if (elicitation) client.setRequestHandler(ElicitRequestSchema, relay);
      if (sampling) client.setRequestHandler(CreateMessageRequestSchema, relay);
      if (roots) client.setRequestHandler(ListRootsRequestSchema, relay);
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => peer.listChanged("tools"));
      client.setNotificationHandler(PromptListChangedNotificationSchema, () => peer.listChanged("prompts"));
      client.setNotificationHandler(ResourceListChangedNotificationSchema, () => peer.listChanged("resources"));
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => peer.resourceUpdated(n.params));
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => peer.log(n.params));
      // The SDK client offers its latest version and accepts the member's choice (basic/lifecycle "Version
      // Negotiation"): the member's era is independent of the one the virtual server agreed with its client. With a
      // session id already (resumed), the SDK sends no initialize: the version and capabilities are the stored ones.
      try {
        await client.connect(transport, { timeout });
      } catch (error) {
        opening = undefined;
        await client.close().catch(() => {});
        throw error;
      }
      if (resumed) {
        if (resumed.protocolVersion) transport.setProtocolVersion(resumed.protocolVersion);
        resumedCapabilities = resumed.capabilities;
      } else {
        resumedCapabilities = undefined;
        await store.remember?.({
          ...(transport.sessionId !== undefined && { sessionId: transport.sessionId }),
          ...(transport.protocolVersion !== undefined && { protocolVersion: transport.protocolVersion }),
          ...(client.getServerCapabilities() !== undefined && { capabilities: client.getServerCapabilities() }),
        });
      }
      // This opening's own session: by the time its level is told, another opening (after a 404) may be the current
      // one, and what this one resolves to (and what is closed as stale) must still be its own (found by review).
      const mine = { client, transport };
      // Closed while it opened: close() ends it (it waits for this opening), and nothing goes on in it.
      if (closed) return mine;
      opened = mine;
      // The client's GET stream may have opened while this session was opening (listen() then found none to hold a
      // stream for): the member's is opened now, whichever came last (a second GET is refused with 405 and dropped).
      if (peer.stream() && !listening) transport.resumeStream("").catch(() => {});
      const level = peer.logLevel();
      if (level) await setLevel(client, level, timeout, resumedCapabilities);
      if (opened === mine) ready = mine;
      return mine;
    });
    return opening;
  }

  /**
   * server/utilities/logging "Setting Log Level": told to a member that declared logging (others have no levels),
   * waited for `timeout` at most (a member slow to take it holds up nobody for longer; its level is its own affair).
   */
  async function setLevel(client: Client, level: LoggingLevel, timeout: number, capabilities = client.getServerCapabilities()) {
    if (!(client.getServerCapabilities() ?? capabilities)?.logging) return;
    await client.setLoggingLevel(level, { timeout }).catch(() => {});
  }

  const forgotten = (error: unknown) => error instanceof StreamableHTTPError && error.code === 404;

  return {
    connectorId,
    /** One request on the member's session; a forgotten session is opened again and the request sent once more. */
    async request(
      method: string,
      params: Record<string, unknown> | undefined,
      options: {
        timeout: number;
        cancel?: Cancellation;
        onprogress?: (progress: Progress) => void;
        call?: CallContext;
        /** A page of a listing (merge.ts): its answer may be the last one's again (answer-reuse.ts). */
        listing?: boolean;
      },
    ): Promise<Result> {
      /** The session the request was last sent in: one found forgotten is let go only if it is still the current one. */
      let used: typeof opened;
      const send = async () => {
        // The session once open, without waiting a turn for it.
        // The opening (its log level told too) within the request's own bound: a listing's, or the client's cancel.
        const { client, transport } = (used = ready ?? (await until(open(options.timeout), options.cancel)));
        // A request with no progress to pass on goes without the SDK client (plain-request.ts): its answer is the same.
        if (!options.onprogress) {
          const { call, timeout, cancel, listing } = options;
          return sendPlain(plainSession(client, transport), `vs-${++plainIds}`, method, params, {
            timeout,
            cancel,
            listing,
            // Only what the member sends with the answer needs the call's context (a request of its, relayed on the
            // call's stream): the request itself runs outside it, which costs a call less.
            deliver: call && ((message: JSONRPCMessage) => calls.run(call, () => transport.onmessage?.(message))),
          });
        }
        // basic/utilities/cancellation: an aborted signal makes the SDK send notifications/cancelled with its own id.
        // It is aborted too when the member's event stream for the request ends without its answer (watched).
        const broken = new AbortController();
        const requestOptions: RequestOptions = {
          timeout: options.timeout,
          signal: options.cancel ? AbortSignal.any([options.cancel.signal, broken.signal]) : broken.signal,
          ...(options.onprogress && { onprogress: options.onprogress, resetTimeoutOnProgress: true }),
        };
        const settled = new AbortController();
        const sent = () =>
          sdkRequests
            .run({ broken: (why) => broken.abort(why), settled: settled.signal }, () =>
              client.request({ method, ...(params && { params }) }, ANY_RESULT, requestOptions),
            )
            .finally(() => settled.abort());
        return options.call ? calls.run(options.call, sent) : sent();
      };
      const { call } = options;
      if (call) serving.add(call);
      try {
        return await send();
      } catch (error) {
        if (!forgotten(error)) throw error;
        // Another request that found it forgotten first has let it go, and opens (or opened) the next one: this one
        // goes on in that, rather than letting it go too and leaving it open at the member (found by review).
        if (used !== undefined && opened === used) {
          opening = undefined;
          opened = undefined;
          ready = undefined;
          void used.client.close().catch(() => {});
        }
        return send();
      } finally {
        if (call) serving.delete(call);
      }
    },
    /** The client opened its GET stream: the member's is opened too, once its session is (the SDK's own GET). */
    listen(): void {
      // An empty resumption token is a plain GET (no Last-Event-ID): the SDK's way to open the stream again.
      if (opened && !listening) opened.transport.resumeStream("").catch(() => {});
    },
    /** The client's GET stream ended: the member's ends too. */
    unlisten: (): void => listening?.(),
    /** The client set a log level: told to the member now if its session is open (else when it opens), within `timeout`. */
    async setLogLevel(level: LoggingLevel, timeout: number): Promise<void> {
      if (opened) await setLevel(opened.client, level, timeout, resumedCapabilities);
    },
    /** The client's roots changed (client/roots "Root List Changes"): told to a member that was offered roots. */
    async rootsChanged(): Promise<void> {
      if (opened && peer.capabilities.roots?.listChanged) await opened.client.sendRootsListChanged().catch(() => {});
    },
    /** What the member declared at initialize (its session opened first, within `timeout` and until `cancel`). */
    async capabilities(timeout: number, cancel?: Cancellation): Promise<ServerCapabilities | undefined> {
      const { client } = await until(open(timeout), cancel);
      return client.getServerCapabilities() ?? resumedCapabilities;
    },
    /** Ends the upstream session (DELETE with its Mcp-Session-Id), if it was opened. */
    async close(): Promise<void> {
      closed = true;
      const current = opening;
      opening = undefined;
      opened = undefined;
      ready = undefined;
      listening?.();
      if (!current) return;
      try {
        const { client, transport } = await current;
        await transport.terminateSession().catch(() => {});
        await client.close();
      } catch {
        // It never opened: nothing to end.
      }
    },
  };
}
export type MemberSession = ReturnType<typeof openMemberSession>;
