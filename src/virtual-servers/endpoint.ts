import {
  LoggingLevelSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type ClientCapabilities,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import { Conflict, InvalidToken, PayloadTooLarge } from "../http-errors/errors";
import { messageReadAlready } from "../http/read-already";
import { readRequestCapped } from "../http/read-capped";
import { MalformedJson, parseStrictRequest } from "../http/strict-json";
import type { Tracing } from "../observability/tracing";
import type { Sealer } from "../secrets/sealer";
import type { Principal } from "../users/model";
import { VERSION } from "../version";
import {
  errorOf,
  INVALID_PARAMS,
  INVALID_REQUEST,
  isRequestId,
  jsonAnswer,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  resultOf,
  RpcError,
  type JsonRpcMessage,
  type RequestId,
} from "./jsonrpc";
import { answerCall } from "./call-answer";
import { Cancel } from "./cancellation";
import type { ConflictNotes } from "./conflicts";
import type { MemberFailures } from "./member-failures";
import { decodeListCursor, encodeListCursor, type ListKind } from "./list-cursor";
import { closedListingError, LISTS, listMember, mergeLists, type Member } from "./merge";
import { compareNames, rememberingAdmitter } from "./names";
import type { MemberWithState, VirtualServerRow } from "./repository";
import { withSpan } from "./trace-context";
import { ROUTED, routeRequest, type RoutedMethod } from "./route";
import type { VirtualServerService } from "./service";
import { createToolSearch } from "./search";
import type { ClientSession, ClientSessions, Listing } from "./sessions";

/** MCP 2025-11-25 basic/lifecycle "Version Negotiation": the session eras served here, the latest first. */
export const PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18"] as const;
/**
 * What the MCP-Protocol-Version header may say on a session's requests: every session-era version the SDK knows (its
 * servers accept them too, and clients such as the conformance kit send 2025-03-26 on a session that agreed on a later
 * one). Only PROTOCOL_VERSIONS are agreed at initialize.
 */
const HEADER_VERSIONS = new Set<string>(SUPPORTED_PROTOCOL_VERSIONS);
/** Items per page of a merged list (MCP 2025-11-25 basic/utilities/pagination: the page size is the server's). */
export const PAGE_SIZE = 100;
const LIST_METHODS: Record<string, ListKind> = Object.fromEntries(
  (Object.keys(LISTS) as ListKind[]).map((list) => [LISTS[list].method, list]),
);

export type VirtualEndpointDeps = {
  servers: Pick<VirtualServerService, "withMembers">;
  sessions: ClientSessions;
  /** Where each listing's conflicts are noted for the resource (conflicts.ts). */
  conflicts: ConflictNotes;
  /** Where each listing's failed members are noted for the resource (member-failures.ts). */
  failures: MemberFailures;
  sealer: Sealer;
  /** VIRTUAL__MEMBER_TIMEOUT_SECONDS, in ms. */
  memberTimeoutMs: number;
  /** The largest message accepted (PROXY__MAX_MESSAGE_BYTES). */
  maxMessageBytes: number;
  /** OpenTelemetry, when on: a span per request, the member calls made for it its children (trace-context.ts). */
  tracing?: Tracing;
};

const SESSION_HEADER = "mcp-session-id";
/** What a member call's caller keeps of the caller at the virtual server's URL (memberCaller). */
type CarriedField = "id" | "username" | "role" | "connector" | "credential";
/** Admissions remembered, at most (four lists per virtual server in use). */
const MAX_REMEMBERED_ADMISSIONS = 4096;

/**
 * A virtual server's MCP endpoint (docs/interface.md §9.4), Streamable HTTP for the 2025-06-18 and 2025-11-25
 * eras (MCP 2025-11-25 basic/transports): the virtual server answers `initialize` itself, with its own session, and
 * sends every other request on to its members through their proxy URLs (member-session.ts).
 */
export function createVirtualEndpoint(deps: VirtualEndpointDeps) {
  const { sealer, sessions, memberTimeoutMs } = deps;
  const search = createToolSearch();

  /** The members as routing names them, once per view of them (the repository caches its views: a call makes none). */
  const routed = new WeakMap<readonly MemberWithState[], Member[]>();
  function membersOf(members: readonly MemberWithState[]): Member[] {
    let found = routed.get(members);
    if (!found) routed.set(members, (found = members.map((m) => ({ connectorId: m.connector_id, prefix: m.prefix }))));
    return found;
  }

  async function serverOf(caller: Principal, id: string) {
    // RFC 8707 §2: this service's access tokens are each bound to one resource: a connector's proxy URL is not a
    // virtual server, and one virtual server is not another.
    if (caller.connector !== undefined)
      throw new InvalidToken("This access token was issued for a connector's MCP proxy URL, not for a virtual server");
    if (caller.boundVirtualServer !== undefined && caller.boundVirtualServer !== id)
      throw new InvalidToken("This access token was issued for another virtual server's MCP URL");
    const { row, members } = await deps.servers.withMembers(caller, id);
    return { row, members: membersOf(members) };
  }

  /**
   * Who the member calls are: the caller, marked as through this virtual server for their audit records and metrics.
   * An access token bound to this virtual server (RFC 8707 §2, checked by serverOf) reaches the members through it as
   * the person it acts for: the binding is not theirs, and at a member's proxy URL it would be refused (proxy/admit.ts).
   */
  const memberCaller = (caller: Principal, serverId: string): Principal => {
    // Field by field (a rest pattern's copy was a call's largest object allocation); a field added to Principal fails
    // to compile here until it is carried or dropped on purpose.
    const everyField: Exclude<keyof Principal, CarriedField | "boundVirtualServer" | "virtualServer"> extends never
      ? true
      : never = true;
    void everyField;
    const { id, username, role, connector, credential } = caller;
    const person: Principal = { id, username, role, virtualServer: serverId };
    if (connector !== undefined) person.connector = connector;
    if (credential !== undefined) person.credential = credential;
    return person;
  };

  /** Each virtual server's lists are admitted once for as long as the members offer the same names (names.ts). */
  const admit = rememberingAdmitter(MAX_REMEMBERED_ADMISSIONS);

  /** Every member's whole list, asked concurrently, merged (merge.ts); remembered for the calls that follow. */
  async function merge(session: ClientSession, members: readonly Member[], list: ListKind) {
    const begun = session.listChanges;
    const lists = await Promise.all(members.map((m) => listMember(session.member(m.connectorId), m, list, memberTimeoutMs)));
    const merged = mergeLists(list, lists, (kind, offers) => admit(`${session.serverId}\n${list}`, kind, offers));
    // A list that changed while the members were asked may not show the change: the next call lists again (found by
    // review: calls went on resolving through it until the client listed).
    if (session.listChanges === begun)
      session.listings.set(list, { admission: merged.admission, failed: merged.failed } satisfies Listing);
    deps.conflicts.note(session.serverId, list, merged.admission.conflicts);
    const failed = new Map(merged.failed.map((f) => [f.member.connectorId, f.why]));
    const answered = members.map((m) => m.connectorId).filter((id) => !failed.has(id));
    deps.failures.note(session.serverId, failed, answered);
    return merged;
  }

  /** One page of a merged list, after the cursor's position (list-cursor.ts); a cursor not ours is -32602. */
  async function listPage(
    session: ClientSession,
    server: VirtualServerRow,
    members: readonly Member[],
    list: ListKind,
    params: Record<string, unknown>,
  ) {
    let after: string | undefined;
    if (params.cursor !== undefined) {
      const position = decodeListCursor(sealer, server.id, list, params.cursor);
      // MCP 2025-11-25 basic/utilities/pagination "Error Handling": an invalid cursor is -32602.
      if (!position) throw new RpcError(INVALID_PARAMS, "Invalid cursor");
      after = position.after;
    }
    const merged = await merge(session, members, list);
    if (server.failure_mode === "closed" && merged.failed.length > 0) throw closedListingError(merged.failed);
    const { names } = merged.admission;
    let start = after === undefined ? 0 : names.findIndex((name) => compareNames(name, after) > 0);
    if (start < 0) start = names.length;
    const page = names.slice(start, start + PAGE_SIZE);
    const more = start + PAGE_SIZE < names.length;
    return {
      [LISTS[list].field]: page.map(merged.item),
      ...(more && { nextCursor: encodeListCursor(sealer, server.id, list, { after: page.at(-1)! }) }),
    };
  }

  async function initialize(id: RequestId, caller: Principal, server: VirtualServerRow, params: Record<string, unknown>) {
    const asked = params.protocolVersion;
    // basic/lifecycle: the version asked for if supported, else the latest this server supports.
    const version = PROTOCOL_VERSIONS.find((v) => v === asked) ?? PROTOCOL_VERSIONS[0];
    const capabilities = (
      typeof params.capabilities === "object" && params.capabilities !== null ? params.capabilities : {}
    ) as ClientCapabilities;
    const session = await sessions.open(server.id, caller, version, capabilities);
    const result = {
      protocolVersion: version,
      // server/tools, server/prompts, server/resources: the members' list changes and resource updates are relayed.
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { listChanged: true, subscribe: true },
        // server/utilities/logging: the level goes to the members, their messages come on the GET stream.
        logging: {},
      },
      serverInfo: { name: "connector-service-virtual-server", title: server.name, version: VERSION },
      ...(server.description && { instructions: server.description }),
    };
    return jsonAnswer(resultOf(id, result), 200, { "mcp-session-id": session.id });
  }

  /** The POSTed message: a client's, read strictly; or one built in-process (the era bridge's), as it was built. */
  async function readMessage(request: Request): Promise<unknown> {
    /** PROXY__MAX_MESSAGE_BYTES, however the size is known. */
    const tooLarge = () => new PayloadTooLarge(`A message is at most ${deps.maxMessageBytes} bytes`);
    const given = messageReadAlready(request);
    if (given !== undefined) {
      if (given.body.byteLength > deps.maxMessageBytes) throw tooLarge();
      return given.message;
    }
    // Bytes, counted as they arrive when no length is declared (a chunked body): not read whole first, and not
    // counted in UTF-16 code units, which let a message of 3-byte characters be three times the limit (found by review).
    const bytes = await readRequestCapped(request, deps.maxMessageBytes);
    if (bytes === undefined) throw tooLarge();
    // Read as the proxy reads a message (http/strict-json.ts): its checks and limits, its numbers kept exactly.
    return parseStrictRequest(bytes);
  }

  async function post(caller: Principal, serverId: string, request: Request): Promise<Response> {
    let message: JsonRpcMessage;
    try {
      message = (await readMessage(request)) as JsonRpcMessage;
    } catch (e) {
      if (!(e instanceof MalformedJson)) throw e;
      return jsonAnswer(errorOf(null, new RpcError(PARSE_ERROR, `Parse error: ${e.message}`)), 400);
    }
    // 2025-06-18 removed batches; a message is one JSON-RPC object.
    if (typeof message !== "object" || message === null || Array.isArray(message) || message.jsonrpc !== "2.0")
      return jsonAnswer(errorOf(null, new RpcError(INVALID_REQUEST, "Not a JSON-RPC 2.0 message (batches are not served)")), 400);
    // JSON-RPC 2.0 §4: a request's method is a string and its id a string or a number (MCP 2025-11-25 basic: never
    // null). Anything else is no request, notification or response: an error, not a 202 that drops it (found by review).
    if ("method" in message && (typeof message.method !== "string" || ("id" in message && !isRequestId(message.id))))
      return jsonAnswer(
        errorOf(null, new RpcError(INVALID_REQUEST, "A request's method is a string and its id a string or a number")),
        400,
      );
    const { row: server, members } = await serverOf(caller, serverId);
    const through = memberCaller(caller, server.id);
    const method = typeof message.method === "string" ? message.method : undefined;
    const id = isRequestId(message.id) ? message.id : undefined;
    const params = (typeof message.params === "object" && message.params !== null ? message.params : {}) as Record<
      string,
      unknown
    >;
    if (method === "initialize" && id !== undefined) return initialize(id, through, server, params);

    // basic/transports "Session Management": a request without the session's id is a 400, an unknown id a 404.
    const sessionId = request.headers.get(SESSION_HEADER);
    if (!sessionId)
      return jsonAnswer(
        errorOf(id ?? null, new RpcError(INVALID_REQUEST, "Mcp-Session-Id is required: send initialize first")),
        400,
      );
    const session = await sessions.find(sessionId, server.id, through);
    if (!session) return jsonAnswer(errorOf(id ?? null, new RpcError(-32001, "Session not found: initialize a new one")), 404);
    const version = request.headers.get("mcp-protocol-version");
    // basic/transports "Protocol Version Header": an unsupported version is a 400.
    if (version !== null && !HEADER_VERSIONS.has(version)) {
      const why = `MCP-Protocol-Version ${version} is not supported: ${[...HEADER_VERSIONS].join(", ")}`;
      return jsonAnswer(errorOf(id ?? null, new RpcError(INVALID_REQUEST, why)), 400);
    }

    // basic/transports "Sending Messages to the Server": notifications and responses are accepted with 202.
    if (id === undefined || method === undefined) {
      sessions.receive(session, message);
      return new Response(null, { status: 202 });
    }
    try {
      if (method === "ping") return jsonAnswer(resultOf(id, {}));
      if (method === "logging/setLevel") {
        // server/utilities/logging: one of the RFC 5424 levels, else invalid params.
        const level = LoggingLevelSchema.safeParse(params.level);
        if (!level.success) throw new RpcError(INVALID_PARAMS, `Invalid level: ${LoggingLevelSchema.options.join(", ")}`);
        await sessions.setLogLevel(session, level.data, memberTimeoutMs);
        return jsonAnswer(resultOf(id, {}));
      }
      const list = LIST_METHODS[method];
      // tool_mode search (search.ts): two tools listed, and tools/call answered by them or routed by name.
      const searching = server.tool_mode === "search";
      if (list === "tools" && searching)
        return jsonAnswer(resultOf(id, await search.list(server.failure_mode, params, () => merge(session, members, list))));
      if (list) return jsonAnswer(resultOf(id, await listPage(session, server, members, list, params)));
      if (method in ROUTED) {
        // MCP 2025-11-25 basic: `_meta` is an object and a progress token a string or a number. Anything else is the
        // client's error, not the member's input: "abc" went on as {"0": "a", ...}, 5 as no _meta (found by review).
        const meta = params._meta;
        if (meta !== undefined && meta !== null && (typeof meta !== "object" || Array.isArray(meta)))
          throw new RpcError(INVALID_PARAMS, "params._meta must be an object");
        const token = (meta as Record<string, unknown> | null | undefined)?.progressToken;
        if (token !== undefined && !isRequestId(token))
          throw new RpcError(INVALID_PARAMS, "params._meta.progressToken must be a string or a number");
        const listing = (kind: ListKind) => merge(session, members, kind);
        const streams = (request.headers.get("accept") ?? "").includes("text/event-stream");
        // basic/utilities/cancellation: the client's notifications/cancelled names this id (sessions.ts receive).
        const cancel = new Cancel();
        session.calls.set(id, cancel);
        return await answerCall(id, streams, cancel, (channel) => {
          // basic/utilities/progress: the member's progress, with the progressToken the client gave.
          const onprogress =
            token === undefined
              ? undefined
              : (p: Progress) =>
                  channel({ jsonrpc: "2.0", method: "notifications/progress", params: { ...p, progressToken: token } });
          const serving = { cancel, channel, ...(onprogress && { onprogress }) };
          const run =
            method === "tools/call" && searching
              ? search.call(session, members, params, listing, serving)
              : routeRequest(session, members, method as RoutedMethod, params, listing, serving);
          return run.finally(() => {
            if (session.calls.get(id) === cancel) session.calls.delete(id);
          });
        });
      }
      throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${method}`);
    } catch (error) {
      if (error instanceof RpcError) return jsonAnswer(errorOf(id, error));
      throw error;
    }
  }

  /** One request at the endpoint, by its HTTP method. */
  async function serve(caller: Principal, serverId: string, request: Request): Promise<Response> {
    if (request.method === "POST") return post(caller, serverId, request);
    if (request.method !== "GET" && request.method !== "DELETE")
      return new Response(null, { status: 405, headers: { allow: "POST, GET, DELETE" } });
    await serverOf(caller, serverId);
    const sessionId = request.headers.get(SESSION_HEADER);
    if (!sessionId) return jsonAnswer(errorOf(null, new RpcError(INVALID_REQUEST, "Mcp-Session-Id is required")), 400);
    // The member GET streams and DELETEs that follow are marked as through this virtual server, as calls are.
    const session = await sessions.find(sessionId, serverId, memberCaller(caller, serverId));
    if (!session) return jsonAnswer(errorOf(null, new RpcError(-32001, "Session not found")), 404);
    if (request.method === "GET") {
      // basic/transports "Listening for Messages from the Server": the client asks for an event stream, and this
      // server keeps one per session (a second is a 409, as the transport allows).
      if (!(request.headers.get("accept") ?? "").includes("text/event-stream"))
        return jsonAnswer(errorOf(null, new RpcError(INVALID_REQUEST, "GET must accept text/event-stream")), 400);
      const stream = sessions.listen(session);
      if (!stream) throw new Conflict("This session's GET stream is open already: one at a time");
      return stream;
    }
    // basic/transports "Session Management": the client ends its session; the upstream sessions end with it.
    await sessions.end(session.id);
    return new Response(null, { status: 204 });
  }

  return {
    /**
     * Whether `caller` may use virtual server `serverId` now (its token's resource, ownership): the era bridge asks it
     * for each 2026-07-28 request before serving it over a session that an earlier request opened.
     */
    async check(caller: Principal, serverId: string): Promise<void> {
      await serverOf(caller, serverId);
    },

    /**
     * One HTTP request at `/api/v1/virtual-servers/{id}/mcp` of an authenticated caller; with tracing on, in a span of
     * its own that the member calls made for it continue (trace-context.ts).
     */
    async handle(caller: Principal, serverId: string, request: Request): Promise<Response> {
      const span = deps.tracing?.server("mcp.virtual_server", request, {
        "mcp.virtual_server.id": serverId,
        "http.request.method": request.method,
      });
      try {
        const response = await withSpan(span, () => serve(caller, serverId, request));
        span?.end({ "http.response.status_code": response.status });
        return response;
      } catch (error) {
        span?.end(undefined, (error as Error).message);
        throw error;
      }
    },
  };
}
export type VirtualEndpoint = ReturnType<typeof createVirtualEndpoint>;
