import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { cancellationOf } from "./cancellation";
import { INTERNAL_ERROR, RpcError } from "./jsonrpc";
import type { MemberSession } from "./member-session";
import { admitNames, type Admission, type MemberNames, type NameKind } from "./names";
import type { ListKind } from "./list-cursor";

/** A member as the endpoint sees it: its connector, its prefix. */
export type Member = { connectorId: string; prefix: string };

/** The lists a virtual server merges: the MCP method, the result's field, the field that names an item, the capability. */
export const LISTS = {
  tools: { method: "tools/list", field: "tools", key: "name", kind: "tool", capability: "tools" },
  prompts: { method: "prompts/list", field: "prompts", key: "name", kind: "prompt", capability: "prompts" },
  resources: { method: "resources/list", field: "resources", key: "uri", kind: "resource", capability: "resources" },
  resource_templates: {
    method: "resources/templates/list",
    field: "resourceTemplates",
    key: "uriTemplate",
    kind: "resource_template",
    capability: "resources",
  },
} as const satisfies Record<
  ListKind,
  { method: string; field: string; key: string; kind: NameKind; capability: "tools" | "prompts" | "resources" }
>;

/** A member's pages followed to the end; more would be a member that never stops (a cursor loop). */
const MAX_MEMBER_PAGES = 1000;

type Item = Record<string, unknown>;
/** One member's whole list, or why it has none. */
export type MemberList = { member: Member; items: readonly Item[] } | { member: Member; failed: string };

const isItem = (x: unknown): x is Item => typeof x === "object" && x !== null;
/** A page's items: what is not an object is left out (the array itself when there is none such). */
const itemsOf = (found: unknown): readonly Item[] =>
  !Array.isArray(found) ? [] : found.every(isItem) ? (found as Item[]) : (found.filter(isItem) as Item[]);

/**
 * A member's items by name (the first of a name), and their names in the member's order: made once for each list a
 * member answers (the same array while its answer stays the same: answer-reuse.ts), as every listing of it needs them.
 */
const byName = new WeakMap<readonly Item[], { key: string; own: Map<string, Item>; names: string[] }>();
function namedItems(items: readonly Item[], key: string) {
  let known = byName.get(items);
  if (known?.key !== key) {
    const own = new Map<string, Item>();
    for (const item of items) if (typeof item[key] === "string" && !own.has(item[key])) own.set(item[key], item);
    known = { key, own, names: [...own.keys()] };
    byName.set(items, known);
  }
  return known;
}

/** Why a member failed, in words for a JSON-RPC error or the member's status. */
export function failureOf(error: unknown, timeoutMs: number): string {
  const late = `it did not answer within ${timeoutMs / 1000} s (VIRTUAL__MEMBER_TIMEOUT_SECONDS)`;
  // The SDK's own timeout (-32001 RequestTimeout), or the listing's signal.
  if (error instanceof McpError && error.code === -32001) return late;
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return late;
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * One member's whole list (MCP 2025-11-25 basic/utilities/pagination: follow `nextCursor` until there is none),
 * within `timeoutMs` for all its pages together (issue 24 item 6: a slow member must not hold up the listing).
 */
export async function listMember(session: MemberSession, member: Member, list: ListKind, timeoutMs: number): Promise<MemberList> {
  const { method, field } = LISTS[list];
  // One bound for the session's opening and every page (a real-time timer, like the SDK's own timeouts).
  const cancel = cancellationOf(AbortSignal.timeout(timeoutMs));
  let items: readonly Item[] = [];
  try {
    // basic/lifecycle "Capability Negotiation": a member that did not declare the capability has none of its items
    // (and is not asked: it would answer -32601, which is not a failure either).
    const capabilities = await session.capabilities(timeoutMs, cancel);
    if (!capabilities?.[LISTS[list].capability]) return { member, items: [] };
    let cursor: string | undefined;
    for (let page = 0; page < MAX_MEMBER_PAGES; page++) {
      const params = cursor === undefined ? undefined : { cursor };
      const result = await session.request(method, params, { timeout: timeoutMs, cancel, listing: true });
      const found = itemsOf(result[field]);
      // One page as it came: the same array while the member's answer stays the same (answer-reuse.ts), which
      // mergeLists then reads once.
      items = items.length === 0 ? found : [...items, ...found];
      const next = result.nextCursor;
      if (typeof next !== "string" || next === "") return { member, items };
      cursor = next;
    }
    return { member, failed: `it served more than ${MAX_MEMBER_PAGES} pages` };
  } catch (error) {
    if (error instanceof McpError && error.code === ErrorCode.MethodNotFound) return { member, items: [] };
    return { member, failed: failureOf(error, timeoutMs) };
  }
}

/**
 * A merged list: what is shown (the admission's names, in name order) with each item's route, and what was left out.
 * An item is made when it is asked for (`item`): a page shows a hundred of a listing's hundreds.
 */
export type Merged = {
  admission: Admission;
  /** The item clients see under an admitted name (a tool or prompt carries that name). */
  item(name: string): Item;
  failed: { member: Member; why: string }[];
};

/** How names are admitted (names.ts admitNames, or one that remembers its last admission). */
export type Admit = (kind: NameKind, offers: MemberNames[]) => Admission;

/** The members' lists as one (names.ts admitNames): exposed names, conflicts left out, in code-unit order. */
export function mergeLists(list: ListKind, lists: MemberList[], admit: Admit = admitNames): Merged {
  const { kind, key } = LISTS[list];
  const failed: Merged["failed"] = [];
  const byMember = new Map<string, Map<string, Item>>();
  const offers: MemberNames[] = [];
  for (const entry of lists) {
    if ("failed" in entry) {
      failed.push({ member: entry.member, why: entry.failed });
      continue;
    }
    const { own, names } = namedItems(entry.items, key);
    byMember.set(entry.member.connectorId, own);
    offers.push({ member: entry.member.connectorId, prefix: entry.member.prefix, names });
  }
  const admission = admit(kind, offers);
  const item = (name: string) => {
    const route = admission.routes.get(name)!;
    const found = byMember.get(route.member)!.get(route.original)!;
    return key === "name" ? { ...found, name } : found;
  };
  return { admission, item, failed };
}

/** failure_mode closed (docs/interface.md §9.4): a listing some member failed is -32603, naming each and why. */
export function closedListingError(failed: Merged["failed"]): RpcError {
  const why = failed.map((f) => `member "${f.member.prefix}" (connector ${f.member.connectorId}): ${f.why}`);
  return new RpcError(INTERNAL_ERROR, `The listing failed (failure_mode closed): ${why.join("; ")}`, {
    failed: failed.map((f) => ({ member: f.member.connectorId, prefix: f.member.prefix, reason: f.why })),
  });
}
