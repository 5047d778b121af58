import { createHash } from "node:crypto";
import { Conflict, Forbidden, NotFound, UpstreamFailed, invalidField } from "../http-errors/errors";
import { UnsafeUrl, type FetchLike } from "../http/fetch";
import type { Job } from "../scheduler/scheduler";
import type { UrlGuard } from "../security/url-guard";
import type { Principal } from "../users/model";
import { checkCard, servedCard } from "./card";
import { CardFetchFailed, fetchCard } from "./fetch-card";
import type { AgentCardInput, Provider, RegisterProviderBody } from "./model";
import type { ProviderRepository, ProviderRow } from "./repository";

export type ProviderServiceDeps = {
  providers: ProviderRepository;
  fetch: FetchLike;
  urlGuard: UrlGuard;
  clock: () => number;
  newId: () => string;
  publicUrl: () => string;
  /** How old a fetched card may get before the scheduler fetches it again. */
  refreshAfterMs: number;
};

export type ServedCard = { body: string; etag: string };

const requireAdmin = (caller: Principal) => {
  if (caller.role !== "admin") throw new Forbidden("Only administrators can register, refresh or remove agent providers");
};

export function createProviderService(deps: ProviderServiceDeps) {
  const { providers, clock } = deps;
  const base = (id: string) => `${deps.publicUrl()}/api/v1/a2a/${id}`;
  // The last served card per provider: its ETag is hashed again only when the body changed.
  const servedCache = new Map<string, ServedCard>();

  function view(row: ProviderRow): Provider {
    const card = row.card;
    return {
      id: row.id,
      name: card.name,
      description: card.description,
      agent_card_url: row.agent_card_url,
      card_url: `${base(row.id)}/.well-known/agent-card.json`,
      a2a_url: `${base(row.id)}/`,
      agent_url: card.url,
      refreshed_at: new Date(row.refreshed_at).toISOString(),
      refresh_error: row.refresh_error,
      created_at: new Date(row.created_at).toISOString(),
    };
  }

  async function found(id: string): Promise<ProviderRow> {
    const row = await providers.find(id);
    if (!row) throw new NotFound(`No agent provider ${id}`);
    return row;
  }

  /** Fetches and checks the card at `url`; the message says which of the two went wrong. */
  async function cardAt(url: URL): Promise<AgentCardInput> {
    const fetched = await fetchCard(url, deps.fetch);
    const checked = checkCard(fetched);
    if (!checked.ok)
      throw new CardFetchFailed(`the card there is not a valid A2A 0.3.0 agent card: ${checked.field}: ${checked.detail}`);
    return checked.card;
  }

  /** Fetches a URL-registered card again; a failure keeps the last good card and is recorded. */
  async function refresh(id: string, caller?: Principal): Promise<Provider> {
    if (caller) requireAdmin(caller);
    const row = await found(id);
    if (!row.agent_card_url) throw new Conflict("This provider's card was registered inline: there is no URL to refresh it from");
    try {
      const card = await cardAt(new URL(row.agent_card_url));
      const updated = await providers.update(id, { card, refreshed_at: clock(), refresh_error: null, updated_at: clock() });
      if (!updated) throw new NotFound(`No agent provider ${id}`);
      return view(updated);
    } catch (e) {
      if (!(e instanceof CardFetchFailed)) throw e;
      await providers.update(id, { refresh_error: e.message, refreshed_at: clock(), updated_at: clock() });
      throw new UpstreamFailed(`Could not refresh the card from ${row.agent_card_url}: ${e.message}; the last good card stays`);
    }
  }

  /** For the scheduler: refreshes every URL-registered card older than the refresh interval. */
  async function refreshStale(): Promise<void> {
    for (const id of await providers.stale(clock() - deps.refreshAfterMs)) await refresh(id).catch(() => undefined);
  }

  return {
    async register(caller: Principal, body: RegisterProviderBody): Promise<Provider> {
      requireAdmin(caller);
      const hasUrl = body.agent_card_url !== undefined;
      if (hasUrl === (body.agent_card !== undefined)) {
        throw invalidField("body", "give exactly one of agent_card_url and agent_card");
      }
      let card: AgentCardInput;
      let cardUrl: string | null = null;
      if (hasUrl) {
        let url: URL;
        try {
          url = new URL(body.agent_card_url!);
          if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError();
          deps.urlGuard.checkLiteral(url);
        } catch (e) {
          throw invalidField("body.agent_card_url", e instanceof UnsafeUrl ? e.message : "must be an absolute http(s) URL");
        }
        try {
          card = await cardAt(url);
        } catch (e) {
          if (e instanceof CardFetchFailed)
            throw invalidField("body.agent_card_url", `could not register the card at ${url.href}: ${e.message}`);
          throw e;
        }
        cardUrl = url.href;
      } else {
        const checked = checkCard(body.agent_card);
        if (!checked.ok) throw invalidField(`body.agent_card.${checked.field}`, checked.detail);
        card = checked.card;
      }
      const now = clock();
      const row: ProviderRow = {
        id: deps.newId(),
        agent_card_url: cardUrl,
        card,
        refreshed_at: now,
        refresh_error: null,
        created_at: now,
        updated_at: now,
      };
      await providers.insert(row);
      return view(row);
    },

    list: async () => ({ items: (await providers.list()).map(view) }),
    get: async (id: string) => view(await found(id)),

    async delete(caller: Principal, id: string): Promise<void> {
      requireAdmin(caller);
      if (!(await providers.delete(id))) throw new NotFound(`No agent provider ${id}`);
      servedCache.delete(id);
    },

    refresh,

    /** The scheduler's: stale cards fetched again, by one replica at a time (it calls agents). */
    job: { name: "refresh-agent-cards", onOneReplica: true, run: refreshStale } satisfies Job,

    /**
     * The served card and its ETag ([RFC 9110 §8.8.3](https://www.rfc-editor.org/rfc/rfc9110#section-8.8.3)): a
     * digest of the body, so it changes with every change of the card, however close together two changes come.
     */
    async card(id: string): Promise<ServedCard> {
      const body = JSON.stringify(servedCard((await found(id)).card, `${base(id)}/`));
      const cached = servedCache.get(id);
      if (cached?.body === body) return cached;
      const served = { body, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"` };
      servedCache.set(id, served);
      return served;
    },

    /** The agent's own A2A endpoint, for the A2A proxy. */
    agentUrl: async (id: string) => new URL((await found(id)).card.url),
  };
}
export type ProviderService = ReturnType<typeof createProviderService>;
