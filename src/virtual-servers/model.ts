import { t } from "elysia";
import { CONNECTOR_STATES } from "../connectors/model";
import { NextCursor } from "../http/pages";
import { MAX_EXPOSED_NAME_LENGTH, PREFIX_PATTERN } from "./names";

/** docs/interface.md §9.1: what one virtual server may hold. */
export const MAX_MEMBERS = 50;
export const MAX_NAME_LENGTH = 200;
export const MAX_DESCRIPTION_LENGTH = 2000;

export const FAILURE_MODES = ["open", "closed"] as const;
export const TOOL_MODES = ["all", "search"] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];
export type ToolMode = (typeof TOOL_MODES)[number];
/** ok: the member's connector is connected and answered; unavailable: it is not, or it failed the last listing (reason says why). */
export const MEMBER_STATUSES = ["ok", "unavailable"] as const;
export type MemberStatus = (typeof MEMBER_STATUSES)[number];
export const CONFLICT_KINDS = ["tool", "prompt", "resource", "resource_template"] as const;

const EXAMPLE_ID = "0196b1f4-3c1a-7a8e-9b2d-5f0e1c2d3a4b";
const EXAMPLE_CONNECTOR = "0196b1f2-7d40-7c11-8e5f-2a9b3c4d5e6f";
const EXAMPLE_USER = "0196b1e0-11aa-7b22-9c33-4d44e55f6677";

const Name = t.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  pattern: "\\S",
  description: "What people call it",
  examples: ["Engineering tools"],
});
const Description = t.String({
  maxLength: MAX_DESCRIPTION_LENGTH,
  description: "What it is for",
  examples: ["GitHub and Linear for the coding agent"],
});
const Prefix = t.String({
  pattern: PREFIX_PATTERN,
  description: `Put before the member's tool and prompt names as \`{prefix}__{name}\`: 1 to 24 of a-z 0-9 - (starting with a letter or digit), or "" for the member's names as they are. Exposed names longer than ${MAX_EXPOSED_NAME_LENGTH} characters are left out and reported in conflicts`,
  examples: ["github"],
});
// Literals, not t.UnionEnum: Elysia gives a UnionEnum its first value as default, which would fill in a PATCH.
const FailureModeField = t.Union([t.Literal("open"), t.Literal("closed")], {
  description:
    "open: a member that is down is left out of listings (its status says why); closed: a listing with a member down is an error",
  examples: ["open"],
});
const ToolModeField = t.Union([t.Literal("all"), t.Literal("search")], {
  description:
    "all: every admitted tool is listed; search: two tools, search_tools (finds admitted tools by name, title and description) and call_tool (calls one); a found tool may also be called by its name",
  examples: ["all"],
});

export const MemberInput = t.Object(
  {
    connector_id: t.String({
      minLength: 1,
      maxLength: 100,
      description: "One of the owner's connectors",
      examples: [EXAMPLE_CONNECTOR],
    }),
    prefix: t.Optional(Prefix),
  },
  { additionalProperties: false },
);
export type MemberInput = typeof MemberInput.static;

const MEMBERS_DOC = {
  maxItems: MAX_MEMBERS,
  description: `At most ${MAX_MEMBERS} of the owner's connectors, each once. Without a prefix, a new member gets its connector's name lower-cased to a-z 0-9 - (24 characters at most; the id's first 8 characters if nothing is left), and a member already there keeps its prefix. Prefixes are unique within the virtual server, "" too`,
  examples: [[{ connector_id: EXAMPLE_CONNECTOR, prefix: "github" }]],
};
const Members = t.Array(MemberInput, MEMBERS_DOC);

export const CreateVirtualServerBody = t.Object(
  {
    name: Name,
    description: t.Optional(Description),
    members: Members,
    failure_mode: t.Optional(FailureModeField),
    tool_mode: t.Optional(ToolModeField),
  },
  {
    additionalProperties: false,
    // The first example is what Swagger UI's "Try it out" sends untouched: it must be accepted as it stands, and no
    // connector id can be known in advance (members is documented with one; add them here or with PATCH).
    examples: [
      { name: "Engineering tools", description: "GitHub and Linear for the coding agent", members: [], failure_mode: "open" },
      {
        name: "Engineering tools",
        members: [{ connector_id: EXAMPLE_CONNECTOR, prefix: "github" }],
        failure_mode: "open",
        tool_mode: "all",
      },
    ],
  },
);
export type CreateVirtualServerBody = typeof CreateVirtualServerBody.static;

export const UpdateVirtualServerBody = t.Object(
  {
    name: t.Optional(Name),
    description: t.Optional(t.Union([Description, t.Null()], { description: "null removes it" })),
    members: t.Optional(
      t.Array(MemberInput, { ...MEMBERS_DOC, description: `Replaces the members. ${MEMBERS_DOC.description}` }),
    ),
    failure_mode: t.Optional(FailureModeField),
    tool_mode: t.Optional(ToolModeField),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ failure_mode: "closed" }] },
);
export type UpdateVirtualServerBody = typeof UpdateVirtualServerBody.static;

export const Member = t.Object({
  connector_id: t.String({ examples: [EXAMPLE_CONNECTOR] }),
  prefix: t.String({ description: 'The member\'s prefix ("" : its names as they are)', examples: ["github"] }),
  state: t.UnionEnum(CONNECTOR_STATES, { description: "The member connector's state", examples: ["connected"] }),
  status: t.UnionEnum(MEMBER_STATUSES, {
    description:
      "ok: its connector is connected and it answered the MCP endpoint's last listing (if any); unavailable: it is not, or it failed that listing, and reason says why",
    examples: ["ok"],
  }),
  reason: t.Union([t.String(), t.Null()], {
    description:
      "Why the member is unavailable (the connector's disconnect_reason, its state, or why it failed the last listing); null when ok",
    examples: [null],
  }),
});

export const NameConflict = t.Object({
  kind: t.UnionEnum(CONFLICT_KINDS, { examples: ["tool"] }),
  name: t.String({ description: "The exposed name (a URI for resources and templates)", examples: ["search"] }),
  members: t.Array(t.String(), {
    description: "The connector ids of the members that offered it",
    examples: [[EXAMPLE_CONNECTOR]],
  }),
});

export const VirtualServer = t.Object(
  {
    id: t.String({ format: "uuid", examples: [EXAMPLE_ID] }),
    name: t.String({ examples: ["Engineering tools"] }),
    description: t.Union([t.String(), t.Null()], { examples: ["GitHub and Linear for the coding agent"] }),
    members: t.Array(Member),
    failure_mode: t.UnionEnum(FAILURE_MODES, { examples: ["open"] }),
    tool_mode: t.UnionEnum(TOOL_MODES, { examples: ["all"] }),
    conflicts: t.Array(NameConflict, {
      description:
        "Names left out of the listings because two members offer them or they are too long, as the MCP endpoint's last listing of each kind on this replica saw them ([] before any)",
    }),
    owner_id: t.String({ description: "The user it belongs to (administrators see everyone's)", examples: [EXAMPLE_USER] }),
    created_at: t.String({ format: "date-time", examples: ["2026-11-25T12:00:00.000Z"] }),
    updated_at: t.String({ format: "date-time", examples: ["2026-11-25T12:00:00.000Z"] }),
    mcp_url: t.String({
      format: "uri",
      description: "Where MCP clients connect",
      examples: [`https://connectors.example.com/api/v1/virtual-servers/${EXAMPLE_ID}/mcp`],
    }),
  },
  { title: "VirtualServer" },
);
export type VirtualServer = typeof VirtualServer.static;

export const VirtualServerList = t.Object({ items: t.Array(VirtualServer), next_cursor: NextCursor });
export type VirtualServerList = typeof VirtualServerList.static;
