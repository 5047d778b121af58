import { Value } from "@sinclair/typebox/value";
import { AgentCardInput, type AgentCard } from "./model";

export type CardCheck = { ok: true; card: AgentCardInput } | { ok: false; field: string; detail: string };

/** Checks a card against the A2A 0.3.0 model; the first problem names its field (`skills.0.tags`). */
export function checkCard(value: unknown): CardCheck {
  const first = Value.Errors(AgentCardInput, value).First();
  if (first) {
    const field = first.path.split("/").filter(Boolean).join(".") || "(the card)";
    return { ok: false, field, detail: first.message };
  }
  const card = value as AgentCardInput;
  try {
    const url = new URL(card.url);
    if (url.protocol !== "http:" && url.protocol !== "https:")
      return { ok: false, field: "url", detail: "must be an http(s) URL" };
  } catch {
    return { ok: false, field: "url", detail: "must be an absolute URL" };
  }
  return { ok: true, card: Value.Clean(AgentCardInput, structuredClone(value)) as AgentCardInput };
}

export const BASIC_SCHEME = "basic";

/**
 * The card clients get (docs/interface.md §7): the agent's own fields, but `url` (and the only interface) is this
 * service's A2A proxy, which speaks JSON-RPC and takes HTTP Basic — so `securitySchemes`/`security` say so.
 * `protocolVersion` and `preferredTransport` are always explicit. The agent's signatures are dropped: they
 * sign a card this no longer is. Optional fields stay absent rather than null.
 */
export function servedCard(card: AgentCardInput, proxyUrl: string): AgentCard {
  const {
    signatures: _signatures,
    securitySchemes: _schemes,
    security: _security,
    additionalInterfaces: _interfaces,
    ...rest
  } = card;
  return {
    ...rest,
    protocolVersion: card.protocolVersion ?? "0.3.0",
    url: proxyUrl,
    preferredTransport: "JSONRPC",
    additionalInterfaces: [{ transport: "JSONRPC", url: proxyUrl }],
    securitySchemes: {
      [BASIC_SCHEME]: { type: "http", scheme: "basic", description: "A user of the connector service (HTTP Basic)" },
    },
    security: [{ [BASIC_SCHEME]: [] }],
  };
}
