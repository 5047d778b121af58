import type { Result, Tool } from "@modelcontextprotocol/sdk/types.js";
import MiniSearch from "minisearch";
import { z } from "zod";
import { INVALID_PARAMS, RpcError } from "./jsonrpc";
import type { ListKind } from "./list-cursor";
import { closedListingError, type Member, type Merged } from "./merge";
import type { Admission } from "./names";
import { routeRequest, type Serving } from "./route";
import type { ClientSession } from "./sessions";

/**
 * `tool_mode: "search"` (docs/interface.md §9.5; issue 24 item 9): a virtual server lists two tools instead of its
 * members' — `search_tools`, which finds admitted tools by what they are for, and `call_tool`, which calls one — so an
 * agent's context holds two definitions, not hundreds. Admission is unchanged: the index is made of the session's
 * merged tool listing (names.ts), so a tool a policy hides or a conflict leaves out is neither found nor callable.
 */

export const SEARCH_TOOLS = "search_tools";
export const CALL_TOOL = "call_tool";
/** The most tools one search returns: enough to choose from, few enough for an agent's context. */
export const MAX_SEARCH_LIMIT = 50;
export const DEFAULT_SEARCH_LIMIT = 10;
/** The longest query searched: a task said in words, not a document. */
export const MAX_SEARCH_QUERY_LENGTH = 1000;

const SearchInput = z.object({
  // Bounded: fuzzy matching takes a matrix the square of a word's length (a 40,000-character word, 1.6 GB), and
  // every word is looked up in the index (found by review).
  query: z
    .string()
    .min(1)
    .max(MAX_SEARCH_QUERY_LENGTH)
    .describe("What the tool should do, in words (matched against tool names, titles and descriptions)"),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_SEARCH_LIMIT)
    .default(DEFAULT_SEARCH_LIMIT)
    .describe("How many tools at most, best first"),
});
const CallInput = z.object({
  name: z.string().min(1).describe(`The tool's name, as ${SEARCH_TOOLS} gave it`),
  arguments: z.record(z.string(), z.unknown()).optional().describe("The tool's arguments, as its inputSchema describes them"),
});

/** The input schema clients see, from the schema the arguments are checked with (one definition). */
const inputSchema = (schema: z.ZodType) => {
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io: "input" });
  return json as Tool["inputSchema"];
};

/** What tools/list answers in search mode: these two, in one page. */
export const SEARCH_MODE_TOOLS: Tool[] = [
  {
    name: SEARCH_TOOLS,
    title: "Search tools",
    description: `Finds the tools of this server that fit a task, best first, with their full definitions (name, description, inputSchema). Call one with ${CALL_TOOL}, or by its name.`,
    inputSchema: inputSchema(SearchInput),
    outputSchema: {
      type: "object",
      properties: {
        tools: { type: "array", items: { type: "object" }, description: "Tool definitions, best match first" },
        unavailable: {
          type: "array",
          items: { type: "object" },
          description: "Members that could not be asked, whose tools are missing: {member, prefix, reason}",
        },
      },
      required: ["tools"],
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: CALL_TOOL,
    title: "Call a tool",
    description: `Calls a tool ${SEARCH_TOOLS} found, by name, with its arguments; answers what the tool answers.`,
    inputSchema: inputSchema(CallInput),
  },
];

type Indexed = { items: ReadonlyMap<string, ReturnType<Merged["item"]>>; index?: MiniSearch<{ id: string }> };

/** Words of a name or text: the library's own split (spaces and punctuation, `_` and `-` included), and camelCase. */
const defaultTokenize = MiniSearch.getDefault("tokenize") as (text: string) => string[];
const tokenize = (text: string) => defaultTokenize(text.replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, "$1 $2"));

const text = (value: unknown) => (typeof value === "string" ? value : "");

/** A tool answer with its structured content, and the same as JSON text (MCP 2025-11-25 server/tools "Structured Content"). */
const structured = (content: Record<string, unknown>): Result => ({
  content: [{ type: "text", text: JSON.stringify(content) }],
  structuredContent: content,
});

/**
 * Input that does not fit a tool's schema is a tool execution error the model can correct (MCP 2025-11-25
 * server/tools "Error Handling"), not a protocol error.
 */
const inputError = (tool: string, error: z.ZodError): Result => ({
  content: [{ type: "text", text: `Invalid arguments for ${tool}: ${z.prettifyError(error)}` }],
  isError: true,
});

/**
 * The search mode of a virtual server's endpoint. Ranking is MiniSearch's (BM25 over name, title and description,
 * with prefix and fuzzy matching); each merged tool listing gets its index once, when first searched, and the next
 * listing (a client's tools/list asks the members again) gets a new one.
 */
export function createToolSearch() {
  /** By the listing's admission: a session's next listing has a new one, and its index goes with the old. */
  const listings = new WeakMap<Admission, Indexed>();

  function remember(merged: Merged): Indexed {
    let indexed = listings.get(merged.admission);
    if (!indexed) {
      indexed = { items: new Map(merged.admission.names.map((name) => [name, merged.item(name)])) };
      listings.set(merged.admission, indexed);
    }
    return indexed;
  }

  function indexOf(indexed: Indexed) {
    if (indexed.index) return indexed.index;
    const index = new MiniSearch<{ id: string }>({
      fields: ["name", "title", "description"],
      tokenize,
      // The name says most of what a tool does; a description says more words, so each of its words counts for less.
      searchOptions: { boost: { name: 3, title: 2 }, prefix: true, fuzzy: 0.2, combineWith: "OR" },
      extractField: (doc, field) => text((doc as Record<string, unknown>)[field]),
    });
    index.addAll(
      [...indexed.items].map(([id, item]) => {
        const annotations = item.annotations as { title?: unknown } | undefined;
        return { id, name: id, title: text(item.title) || text(annotations?.title), description: text(item.description) };
      }),
    );
    return (indexed.index = index);
  }

  type Listing = (list: ListKind) => Promise<Merged>;

  async function search(session: ClientSession, args: unknown, listing: Listing): Promise<Result> {
    const input = SearchInput.safeParse(args ?? {});
    if (!input.success) return inputError(SEARCH_TOOLS, input.error);
    const last = session.listings.get("tools");
    const known = last && listings.get(last.admission);
    // The session's last listing, or one made now (its failed members are then named in the answer).
    const merged = known ? undefined : await listing("tools");
    const indexed = known ?? remember(merged!);
    const failed = merged?.failed ?? last?.failed ?? [];
    const found = indexOf(indexed).search(input.data.query).slice(0, input.data.limit);
    return structured({
      tools: found.map((hit) => indexed.items.get(hit.id as string)!),
      ...(failed.length > 0 && {
        unavailable: failed.map((f) => ({ member: f.member.connectorId, prefix: f.member.prefix, reason: f.why })),
      }),
    });
  }

  return {
    /**
     * tools/list in search mode: the members are asked as in `all` mode (conflicts and failures noted, failure_mode
     * closed applied) and the listing kept for searching, but the answer is the two tools. There is one page: a cursor
     * is never given, so any cursor is not ours (-32602).
     */
    async list(failureMode: "open" | "closed", params: Record<string, unknown>, listing: () => Promise<Merged>) {
      // MCP 2025-11-25 basic/utilities/pagination "Error Handling": an invalid cursor is -32602.
      if (params.cursor !== undefined) throw new RpcError(INVALID_PARAMS, "Invalid cursor");
      const merged = await listing();
      if (failureMode === "closed" && merged.failed.length > 0) throw closedListingError(merged.failed);
      remember(merged);
      return { tools: SEARCH_MODE_TOOLS };
    },

    /**
     * tools/call in search mode, in place of route.ts routeRequest: `search_tools` searches, `call_tool` calls the tool
     * it names, and any other name is called directly — all through the same admission, so an unknown or hidden name
     * is -32602 `Unknown tool` either way. A member tool exposed as `search_tools` or `call_tool` (a member with
     * prefix "") is shadowed by these: it is found by search_tools and reached only through call_tool.
     */
    async call(
      session: ClientSession,
      members: readonly Member[],
      params: Record<string, unknown>,
      listing: Listing,
      serving: Serving,
    ): Promise<Result> {
      // A listing a call makes is kept for searching too.
      const remembering: Listing = async (list) => {
        const merged = await listing(list);
        if (list === "tools") remember(merged);
        return merged;
      };
      if (params.name === SEARCH_TOOLS) return search(session, params.arguments, remembering);
      if (params.name !== CALL_TOOL) return routeRequest(session, members, "tools/call", params, remembering, serving);
      const input = CallInput.safeParse(params.arguments ?? {});
      if (!input.success) return inputError(CALL_TOOL, input.error);
      const { arguments: _asked, ...rest } = params;
      const call = {
        ...rest,
        name: input.data.name,
        ...(input.data.arguments !== undefined && { arguments: input.data.arguments }),
      };
      return routeRequest(session, members, "tools/call", call, remembering, serving);
    },
  };
}
export type ToolSearch = ReturnType<typeof createToolSearch>;
