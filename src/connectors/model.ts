import { t } from "elysia";
import { NextCursor } from "../http/pages";
import { Metadata } from "../presets/model";
import { RateLimits } from "../rate-limits/model";

export const CONNECTOR_STATES = ["created", "auth_required", "connected", "disconnected"] as const;
export type ConnectorState = (typeof CONNECTOR_STATES)[number];
/** How the proxy authenticates to a connected server: nothing, the stored headers, or the OAuth grant. */
export const AUTH_METHODS = ["none", "headers", "oauth"] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

export const MAX_URL_LENGTH = 2048;
export const MAX_HEADERS = 50;
export const MAX_HEADER_VALUE_LENGTH = 8192;

/** A tool name as a server may spell it (the policy names a server's tools by their own names). */
const ServerToolName = t.String({ minLength: 1, maxLength: 256 });
/** A name the policy gives a tool: MCP 2025-11-25's tool name rules (1 to 128 of A-Z a-z 0-9 _ - . /). */
const ExposedToolName = t.String({
  pattern: "^[A-Za-z0-9_./-]{1,128}$",
  description: "1 to 128 of A-Z a-z 0-9 _ - . /",
  error: "must be 1 to 128 of A-Z a-z 0-9 _ - . / (MCP's tool name rules)",
});

/**
 * Which of a server's tools clients see, and as what (docs/behaviour.md "Tool policy"). The proxy applies it to both MCP eras:
 * listings filtered and rewritten, calls of hidden tools refused without reaching the server.
 */
export const ToolPolicy = t.Object(
  {
    allow: t.Optional(
      t.Array(ServerToolName, {
        maxItems: 1000,
        description: "Only these tools (by the server's names) are listed and callable",
      }),
    ),
    deny: t.Optional(
      t.Array(ServerToolName, { maxItems: 1000, description: "These tools (by the server's names) are hidden and refused" }),
    ),
    rename: t.Optional(
      t.Record(t.String({ minLength: 1, maxLength: 256 }), ExposedToolName, {
        description: "The server's name → the name clients see and call",
      }),
    ),
    descriptions: t.Optional(
      t.Record(t.String({ minLength: 1, maxLength: 256 }), t.String({ maxLength: 4096 }), {
        description: "The server's name → the description clients see",
      }),
    ),
    pin: t.Optional(
      t.Union([t.Literal("record"), t.Literal("strict")], {
        description:
          "Pin tool definitions: record (changes show in tool_changes, an event and the log) or strict (changed and new tools are also hidden until approved)",
      }),
    ),
  },
  { additionalProperties: false, title: "ToolPolicy" },
);
export type ToolPolicy = typeof ToolPolicy.static;

/** A tool whose definition is not the approved one: new since the first listing, or changed. */
export const ToolChange = t.Object({
  name: t.String({ description: "The server's name of the tool" }),
  change: t.Union([t.Literal("added"), t.Literal("changed")]),
  detected_at: t.String({ format: "date-time" }),
});
export type ToolChange = typeof ToolChange.static;

/**
 * A tool's definition as its server listed it: the parts pinning compares (proxy/tool-pins.ts `DEFINITION`). What the
 * server sent is kept as it was, so each part is any JSON; only the name is sure to be a string.
 */
export const ToolDefinition = t.Object(
  {
    name: t.String(),
    title: t.Optional(t.Unknown()),
    description: t.Optional(t.Unknown()),
    inputSchema: t.Optional(t.Unknown()),
    outputSchema: t.Optional(t.Unknown()),
    annotations: t.Optional(t.Unknown()),
  },
  { title: "ToolDefinition" },
);
export type ToolDefinition = typeof ToolDefinition.static;

/** A tool of a listing, as pinning records it: the server's name, the digest of its definition, the definition. */
export type SeenTool = { name: string; digest: string; definition: ToolDefinition };

/** A changed tool with both definitions, for a person to compare before approving (GET …/tools/changes). */
export const ToolChangeDetail = t.Object(
  {
    ...ToolChange.properties,
    approved: t.Union([ToolDefinition, t.Null()], {
      description: "The approved definition; null for a tool added since the first listing",
    }),
    current: t.Union([ToolDefinition, t.Null()], {
      description: "The definition as the server last listed it; null when it was recorded before definitions were kept",
    }),
  },
  { title: "ToolChangeDetail" },
);
export type ToolChangeDetail = typeof ToolChangeDetail.static;

export const ToolChangeList = t.Object({ items: t.Array(ToolChangeDetail) }, { title: "ToolChangeList" });
export type ToolChangeList = typeof ToolChangeList.static;

/** The server's tools as it lists them now, before the connector's tool policy and pinning (GET …/tools). */
export const ServerToolList = t.Object(
  { items: t.Array(ToolDefinition, { description: "Every page of the server's tools/list, in its order" }) },
  { title: "ServerToolList" },
);
export type ServerToolList = typeof ServerToolList.static;

export const Connector = t.Object(
  {
    id: t.String({ format: "uuid" }),
    owner_id: t.String({ description: "The user the connector belongs to (administrators see everyone's)" }),
    url: t.String({ description: "MCP server URL: http://, https:// or mcp+stdio://" }),
    state: t.UnionEnum(CONNECTOR_STATES, {
      description: "created → (connect) → auth_required (OAuth pending) → connected → disconnected",
    }),
    disconnect_reason: t.Union([t.String(), t.Null()], { description: "Why the connector is disconnected; null otherwise" }),
    metadata: Metadata,
    auth_request: t.Union([t.Object({ type: t.Literal("code"), authorization_url: t.String({ format: "uri" }) }), t.Null()], {
      description: "Set while an OAuth authorization is pending: open authorization_url in a browser",
    }),
    preset: t.Union([t.String(), t.Null()], { description: "URL of the preset matched at creation, if any" }),
    header_names: t.Array(t.String(), { description: "Names of the stored headers; their values are never shown" }),
    tool_policy: t.Union([ToolPolicy, t.Null()], {
      description: "Which tools clients see and call, and as what; null: all, as the server names them",
    }),
    tools_pinned_at: t.Union([t.String({ format: "date-time" }), t.Null()], {
      description: "With pinning on: when the first whole listing of the server's tools was pinned (approved as it was)",
    }),
    tool_changes: t.Array(ToolChange, {
      description: "With pinning on: tools whose definition differs from the approved one (approve with POST …/tools/approve)",
    }),
    protocol_versions: t.Union([t.Array(t.String()), t.Null()], {
      description:
        "The MCP revisions the server speaks, found at connect (server/discover, then initialize); clients of another era are bridged by the proxy. Null until connected",
    }),
    rate_limits: t.Union([RateLimits, t.Null()], {
      description:
        "Token buckets on the MCP requests to this connector and on single tools' calls; null: none (the callers' own limits still apply)",
    }),
    created_at: t.String({ format: "date-time" }),
    updated_at: t.String({ format: "date-time" }),
  },
  { title: "Connector" },
);
export type Connector = typeof Connector.static;

export const CONNECTOR_EVENT_TYPES = ["connector.created", "connector.updated", "connector.deleted"] as const;
export type ConnectorEventType = (typeof CONNECTOR_EVENT_TYPES)[number];
/** A virtual server's changes travel on the same feed (virtual-servers/repository.ts writes them). */
export const VIRTUAL_SERVER_EVENT_TYPES = ["virtual_server.created", "virtual_server.updated", "virtual_server.deleted"] as const;
export type VirtualServerEventType = (typeof VIRTUAL_SERVER_EVENT_TYPES)[number];
/** Every type of the events feed (the stream and the webhooks). */
export const EVENT_TYPES = [...CONNECTOR_EVENT_TYPES, ...VIRTUAL_SERVER_EVENT_TYPES] as const;

/** What an event says of its connector: enough to update a list, never a credential. */
export const ConnectorEventData = t.Object({
  id: t.String(),
  owner_id: t.String(),
  name: t.Union([t.String(), t.Null()]),
  url: t.String(),
  state: t.UnionEnum(CONNECTOR_STATES),
  disconnect_reason: t.Union([t.String(), t.Null()]),
  updated_at: t.String({ format: "date-time" }),
});
export type ConnectorEventData = typeof ConnectorEventData.static;

/** What an event says of its virtual server: enough to update a list. */
export const VirtualServerEventData = t.Object({
  id: t.String(),
  owner_id: t.String(),
  name: t.String(),
  members: t.Array(t.String(), { description: "The member connectors' ids" }),
  updated_at: t.String({ format: "date-time" }),
});
export type VirtualServerEventData = typeof VirtualServerEventData.static;

export const ConnectorList = t.Object({
  items: t.Array(Connector),
  next_cursor: NextCursor,
});
export type ConnectorList = typeof ConnectorList.static;

export const CreateConnectorBody = t.Object(
  {
    url: t.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: "MCP server URL" }),
    client_id: t.Optional(t.String({ minLength: 1, maxLength: 1024, description: "OAuth client id" })),
    client_secret: t.Optional(t.String({ minLength: 1, maxLength: 4096, description: "OAuth client secret" })),
    metadata: t.Optional(Metadata),
    match_preset: t.Optional(t.Boolean({ default: true, description: "Match the URL against the presets" })),
    rate_limits: t.Optional(RateLimits),
  },
  {
    additionalProperties: false,
    // The URL alone: a person who edits only it stores nothing else (no client_id "string").
    examples: [
      { url: "https://mcp.example.com/mcp" },
      { url: "https://mcp.example.com/mcp", metadata: { name: "Example", description: "Our team's MCP server" } },
    ],
  },
);
export type CreateConnectorBody = typeof CreateConnectorBody.static;

export const ConnectBody = t.Object(
  {
    headers: t.Optional(
      t.Record(t.String(), t.String({ maxLength: MAX_HEADER_VALUE_LENGTH }), {
        description: "Sent with every request to the MCP server. Hop-by-hop, forwarding, Host and cookie headers are refused.",
      }),
    ),
    redirect_url: t.Optional(
      t.String({ maxLength: MAX_URL_LENGTH, description: "Where the browser goes after the OAuth authorization" }),
    ),
    accessToken: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 16384,
        description: "Managed stdio connectors: injected into the server's environment",
      }),
    ),
  },
  {
    additionalProperties: false,
    // No body (or {}) starts OAuth; headers connect a server that takes an API key.
    examples: [{}, { headers: { Authorization: "Bearer sk_live_your_api_key" } }],
  },
);
export type ConnectBody = typeof ConnectBody.static;

export const UpdateConnectorBody = t.Object(
  {
    url: t.Optional(
      t.String({
        minLength: 1,
        maxLength: MAX_URL_LENGTH,
        description:
          "A new MCP server URL, checked as at creation. Another URL disconnects the connector (its credentials and OAuth grant are forgotten): connect it again.",
      }),
    ),
    metadata: t.Optional(Metadata),
    tool_policy: t.Optional(
      t.Union([ToolPolicy, t.Null()], { description: "The tool policy (replaces the stored one); null removes it" }),
    ),
    rate_limits: t.Optional(
      t.Union([RateLimits, t.Null()], { description: "The rate limits (replace the stored ones); null removes them" }),
    ),
    headers: t.Optional(
      t.Record(t.String(), t.String({ maxLength: MAX_HEADER_VALUE_LENGTH }), {
        description:
          "New headers for a connector connected with headers: proven with an MCP handshake before they replace the stored ones (refused: 422, the old ones stay).",
      }),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [
      { metadata: { name: "Stripe (billing team)" } },
      { tool_policy: { deny: ["delete_customer"], pin: "record" } },
      { rate_limits: { requests_per_minute: 600, tools: { send_email: 10 } } },
    ],
  },
);
export type UpdateConnectorBody = typeof UpdateConnectorBody.static;

export const ApproveToolsBody = t.Object(
  {
    names: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 256 }), {
        minItems: 1,
        maxItems: 1000,
        description: "The server's tool names; all changed tools when left out",
      }),
    ),
  },
  { additionalProperties: false, examples: [{ names: ["create_invoice"] }, {}] },
);
