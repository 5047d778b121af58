import { t } from "elysia";

/**
 * The AgentCard of [A2A 0.3.0 §5.5](https://a2a-protocol.org/v0.3.0/specification/) as typed models (the tests hold
 * them to the official JSON schema, test/fixtures/a2a-v0.3.0.schema.json), so it shows in OpenAPI and every registered
 * card is checked field by field. Nullable optional fields are left out when unset.
 */
const Strings = t.Array(t.String());
const SecurityRequirement = t.Record(t.String(), t.Array(t.String()), { description: "Scheme name → scopes" });

export const AgentSkill = t.Object({
  id: t.String({ minLength: 1 }),
  name: t.String({ minLength: 1 }),
  description: t.String(),
  tags: Strings,
  examples: t.Optional(Strings),
  inputModes: t.Optional(Strings),
  outputModes: t.Optional(Strings),
  security: t.Optional(t.Array(SecurityRequirement)),
});

export const AgentCapabilities = t.Object({
  extensions: t.Optional(
    t.Array(
      t.Object({
        uri: t.String(),
        description: t.Optional(t.String()),
        params: t.Optional(t.Record(t.String(), t.Unknown())),
        required: t.Optional(t.Boolean()),
      }),
    ),
  ),
  pushNotifications: t.Optional(t.Boolean()),
  stateTransitionHistory: t.Optional(t.Boolean()),
  streaming: t.Optional(t.Boolean()),
});

const SchemeBase = { description: t.Optional(t.String()) };
export const SecurityScheme = t.Union([
  t.Object({
    type: t.Literal("apiKey"),
    in: t.Union([t.Literal("cookie"), t.Literal("header"), t.Literal("query")]),
    name: t.String(),
    ...SchemeBase,
  }),
  t.Object({ type: t.Literal("http"), scheme: t.String(), bearerFormat: t.Optional(t.String()), ...SchemeBase }),
  t.Object({
    type: t.Literal("oauth2"),
    flows: t.Record(t.String(), t.Unknown()),
    oauth2MetadataUrl: t.Optional(t.String()),
    ...SchemeBase,
  }),
  t.Object({ type: t.Literal("openIdConnect"), openIdConnectUrl: t.String(), ...SchemeBase }),
  t.Object({ type: t.Literal("mutualTLS"), ...SchemeBase }),
]);

const cardFields = {
  capabilities: AgentCapabilities,
  defaultInputModes: Strings,
  defaultOutputModes: Strings,
  description: t.String(),
  name: t.String({ minLength: 1 }),
  skills: t.Array(AgentSkill),
  url: t.String({ minLength: 1 }),
  version: t.String(),
  additionalInterfaces: t.Optional(t.Array(t.Object({ transport: t.String(), url: t.String() }))),
  documentationUrl: t.Optional(t.String()),
  iconUrl: t.Optional(t.String()),
  preferredTransport: t.Optional(t.String()),
  provider: t.Optional(t.Object({ organization: t.String(), url: t.String() })),
  security: t.Optional(t.Array(SecurityRequirement)),
  securitySchemes: t.Optional(t.Record(t.String(), SecurityScheme)),
  signatures: t.Optional(
    t.Array(t.Object({ protected: t.String(), signature: t.String(), header: t.Optional(t.Record(t.String(), t.Unknown())) })),
  ),
  supportsAuthenticatedExtendedCard: t.Optional(t.Boolean()),
};

/** A card as an agent publishes it: protocolVersion may be left out (it defaults to 0.3.0). */
export const AgentCardInput = t.Object({ ...cardFields, protocolVersion: t.Optional(t.String()) }, { title: "AgentCardInput" });
export type AgentCardInput = typeof AgentCardInput.static;

/** A card as the service serves it: every required field, protocolVersion and preferredTransport explicit. */
export const AgentCard = t.Object(
  { ...cardFields, protocolVersion: t.String(), preferredTransport: t.String() },
  { title: "AgentCard" },
);
export type AgentCard = typeof AgentCard.static;

export const RegisterProviderBody = t.Object(
  {
    agent_card_url: t.Optional(
      t.String({ maxLength: 2048, description: "Where the service fetches the agent's card (and refreshes it)" }),
    ),
    agent_card: t.Optional(t.Unknown({ description: "The agent card itself (A2A 0.3.0), instead of agent_card_url" })),
  },
  { additionalProperties: false, examples: [{ agent_card_url: "https://agent.example/.well-known/agent-card.json" }] },
);
export type RegisterProviderBody = typeof RegisterProviderBody.static;

export const Provider = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  description: t.String(),
  agent_card_url: t.Union([t.String(), t.Null()], { description: "Where the card is fetched from; null for an inline card" }),
  card_url: t.String({ description: "The card as this service serves it (HTTP Basic)" }),
  a2a_url: t.String({ description: "The A2A JSON-RPC endpoint through this service" }),
  agent_url: t.String({ description: "The agent's own endpoint, as its card names it" }),
  refreshed_at: t.String({ format: "date-time" }),
  refresh_error: t.Union([t.String(), t.Null()], { description: "Why the last refresh failed; null when it worked" }),
  created_at: t.String({ format: "date-time" }),
});
export type Provider = typeof Provider.static;
export const ProviderList = t.Object({ items: t.Array(Provider) });

/** Limits for fetching a card from its URL. */
export const CARD_FETCH_TIMEOUT_MS = 10_000;
export const MAX_CARD_BYTES = 256 * 1024;
