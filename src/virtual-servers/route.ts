import { DEFAULT_REQUEST_TIMEOUT_MSEC } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { UriTemplate } from "@modelcontextprotocol/sdk/shared/uriTemplate.js";
import { McpError, type Progress, type Result } from "@modelcontextprotocol/sdk/types.js";
import { INTERNAL_ERROR, INVALID_PARAMS, RpcError } from "./jsonrpc";
import type { ListKind } from "./list-cursor";
import { failureOf, type Member } from "./merge";
import { resolveName, SEPARATOR, type Admission, type Route } from "./names";
import type { Cancellation } from "./cancellation";
import type { Channel } from "./relay";
import type { ClientSession, Listing } from "./sessions";

/** A routed request as it is served: its cancellation, where messages related to it go, and its progress. */
export type Serving = { cancel: Cancellation; channel: Channel; onprogress?: (progress: Progress) => void };

/** The requests that go to the one member owning a name: the list the name is admitted by, the parameter holding it. */
export const ROUTED = {
  "tools/call": { list: "tools", param: "name", unknown: "Unknown tool" },
  "prompts/get": { list: "prompts", param: "name", unknown: "Unknown prompt" },
  "resources/read": { list: "resources", param: "uri", unknown: "Unknown resource" },
  // server/resources "Subscriptions": the owner of the URI is subscribed; its notifications/resources/updated reach
  // the client's GET stream (sessions.ts).
  "resources/subscribe": { list: "resources", param: "uri", unknown: "Unknown resource" },
  "resources/unsubscribe": { list: "resources", param: "uri", unknown: "Unknown resource" },
} as const satisfies Record<string, { list: ListKind; param: string; unknown: string }>;
export type RoutedMethod = keyof typeof ROUTED;

/**
 * How long a routed request may take: the SDK's default (60 s), renewed by each progress notification — tools may
 * run long, unlike listings, which VIRTUAL__MEMBER_TIMEOUT_SECONDS bounds.
 */
const CALL_TIMEOUT_MS = DEFAULT_REQUEST_TIMEOUT_MSEC;

/** A member's own JSON-RPC error, as the member gave it (the SDK prefixes its message with "MCP error <code>: "). */
const ownError = (error: McpError) => new RpcError(error.code, error.message.replace(/^MCP error -?\d+: /, ""), error.data);

/**
 * A request routed to the one member that owns its name (issue 24 item 4: one admission decision). The name resolves
 * through the session's last listing of its kind — made now if there is none — so what is not listed cannot be
 * called, and a hidden tool and one that does not exist get the same -32602 (MCP 2025-11-25 server/tools "Error
 * Handling": unknown tools are a protocol error). A call never reaches a member unless its name resolves.
 */
export async function routeRequest(
  session: ClientSession,
  members: readonly Member[],
  method: RoutedMethod,
  params: Record<string, unknown>,
  listing: (list: ListKind) => Promise<Listing>,
  serving: Serving,
): Promise<Result> {
  const { list, param, unknown } = ROUTED[method];
  const name = params[param];
  if (typeof name !== "string") throw new RpcError(INVALID_PARAMS, `params.${param} must be a string`);
  const { admission, failed } = session.listings.get(list) ?? (await listing(list));
  const route =
    resolveName(admission, name) ??
    (list === "resources"
      ? templateRoute((session.listings.get("resource_templates") ?? (await listing("resource_templates"))).admission, name)
      : undefined);
  const member = route && members.find((m) => m.connectorId === route.member);
  if (!route || !member) {
    // A member left out of the last listing (failure_mode open) is named with why, rather than its tools denied.
    const prefix = name.includes(SEPARATOR) ? name.slice(0, name.indexOf(SEPARATOR)) : undefined;
    // A member with prefix "" keeps its own names, any of which may be this one (found by review: its calls were
    // told "Unknown tool" while it was down).
    const down =
      failed.find((f) => prefix !== undefined && f.member.prefix === prefix) ?? failed.find((f) => f.member.prefix === "");
    if (down) throw unavailable(down.member, down.why);
    throw new RpcError(INVALID_PARAMS, `${unknown}: ${name}`);
  }
  const sent = { ...params, [param]: route.original };
  if (params._meta !== undefined) {
    // The SDK client sets its own progressToken when asked to pass progress on (onprogress), and maps it back.
    const { progressToken: _token, ...meta } = (params._meta ?? {}) as Record<string, unknown>;
    if (Object.keys(meta).length > 0) sent._meta = meta;
    else delete sent._meta;
  }
  try {
    return await session.member(member.connectorId).request(method, sent, {
      timeout: CALL_TIMEOUT_MS,
      cancel: serving.cancel,
      call: { channel: serving.channel },
      ...(serving.onprogress && { onprogress: serving.onprogress }),
    });
  } catch (error) {
    // basic/utilities/cancellation: the client stopped waiting; the answer, if any is written, only says so.
    if (serving.cancel.aborted) throw new RpcError(INTERNAL_ERROR, "The request was cancelled by the client");
    if (error instanceof McpError && error.code !== -32001) throw ownError(error);
    throw unavailable(member, failureOf(error, CALL_TIMEOUT_MS));
  }
}

/** Parsed templates, by their text: a template is parsed once, whichever session lists it. */
const templates = new Map<string, UriTemplate | null>();
const parsed = (text: string) => {
  if (!templates.has(text)) {
    let template: UriTemplate | null = null;
    try {
      template = new UriTemplate(text);
    } catch {
      // Not an RFC 6570 template: it routes nothing.
    }
    if (templates.size > 10_000) templates.clear();
    templates.set(text, template);
  }
  return templates.get(text) ?? undefined;
};

/**
 * A URI no member lists, that one member's resource template (RFC 6570) matches: that member's (MCP 2025-11-25
 * server/resources "Resource Templates"). Templates two members offer were left out of the listing (names.ts), so
 * they route nothing; a URI that two admitted templates of different members match is as unknown as none.
 */
function templateRoute(admission: Admission, uri: string): Route | undefined {
  const owners = new Map<string, Route>();
  for (const [text, route] of admission.routes)
    if (parsed(text)?.match(uri)) owners.set(route.member, { ...route, original: uri });
  return owners.size === 1 ? [...owners.values()][0] : undefined;
}

/** A member that could not answer, named with why (issue 24 item 6). */
export const unavailable = (member: Member, why: string) =>
  new RpcError(INTERNAL_ERROR, `Member "${member.prefix}" (connector ${member.connectorId}) is unavailable: ${why}`, {
    member: member.connectorId,
    prefix: member.prefix,
    reason: why,
  });
