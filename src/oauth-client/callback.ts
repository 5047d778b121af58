import { AppError, Unauthorized } from "../http-errors/errors";
import type { Principal } from "../users/model";
import type { Authorization } from "./authorization";
import type { CallbackOutcome } from "./client";

export type CallbackDeps = {
  authorization: Pick<Authorization, "pending" | "complete">;
  connector(id: string): Promise<{ owner_id: string; url: string; metadata: { name?: string } | null } | undefined>;
  user(id: string): Promise<Principal | undefined>;
  /** The person the request's console session signs in, if any (the form carries its own secret: no CSRF header). */
  signedIn(request: Request): Promise<Principal | undefined>;
  /** A user name and password typed into the page, under the failure brake; throws Unauthorized. */
  signIn(request: Request, username: string, password: string): Promise<Principal>;
};

/** The page asking the person to finish: who started the authorization, for which connector, and why not yet. */
export type Confirmation = {
  status: number;
  query: string;
  connector: { name: string; url: string };
  startedBy: string;
  notice?: string;
};

export type CallbackAnswer = { kind: "finished"; outcome: CallbackOutcome } | ({ kind: "confirm" } & Confirmation);

export type CallbackForm = { callback: string; username?: string; password?: string };

/**
 * The end of a connector's OAuth authorization, bound to the person who started it. The callback URL alone proves
 * only that someone approved at the authorization server; sent to a victim, an attacker's authorization URL would
 * otherwise attach the victim's upstream account to the attacker's connector (the code is exchanged for whoever holds
 * the connector). So the code is exchanged only for a browser signed in as the user who started the authorization:
 * its console session, or a user name and password typed into the page. The console's cookie is SameSite=Strict and
 * is not sent on the authorization server's cross-site redirect, so the page asks first and its same-origin form
 * POST carries the cookie ([RFC 6749 §10.12](https://www.rfc-editor.org/rfc/rfc6749#section-10.12): binding the
 * authorization response to the user agent that started it).
 */
export function createCallback(deps: CallbackDeps) {
  /** What the page says of the pending authorization; undefined when it is gone (used or expired). */
  async function describe(params: URLSearchParams) {
    const pending = await deps.authorization.pending(params);
    const row = pending && (await deps.connector(pending.connectorId));
    if (!pending || !row) return undefined;
    // An authorization started before it was recorded who started it: its connector's owner finishes it.
    const expected = pending.startedBy ?? row.owner_id;
    const connector = { name: row.metadata?.name?.trim() || new URL(row.url).host, url: row.url };
    return { expected, connector, startedBy: (await deps.user(expected))?.username ?? "a user who no longer exists" };
  }

  const finished = async (params: URLSearchParams, by?: string): Promise<CallbackAnswer> => ({
    kind: "finished",
    outcome: await deps.authorization.complete(params, by),
  });

  return {
    /** The browser lands (GET): an error from the authorization server ends the flow; a code waits for the person. */
    async land(params: URLSearchParams): Promise<CallbackAnswer> {
      // An error grants nothing: it ends the flow at once (RFC 6749 §4.1.2.1), as does an unknown or used state.
      if (params.has("error") || !params.has("code")) return finished(params);
      const about = await describe(params);
      if (!about) return finished(params);
      return { kind: "confirm", status: 200, query: params.toString(), connector: about.connector, startedBy: about.startedBy };
    },

    /** The person confirms (POST), signed in to the console or with a user name and password on the page. */
    async confirm(request: Request, form: CallbackForm): Promise<CallbackAnswer> {
      const params = new URLSearchParams(form.callback);
      const about = await describe(params);
      if (!about) return finished(params);
      const page = (status: number, notice: string): CallbackAnswer => ({
        kind: "confirm",
        status,
        query: params.toString(),
        connector: about.connector,
        startedBy: about.startedBy,
        notice,
      });
      let person: Principal | undefined;
      try {
        person = form.username ? await deps.signIn(request, form.username, form.password ?? "") : await deps.signedIn(request);
      } catch (e) {
        if (e instanceof Unauthorized)
          return page(401, form.username ? "Wrong user name or password." : "Your console session has ended: sign in below.");
        if (e instanceof AppError && e.status === 429) return page(429, e.message);
        throw e;
      }
      if (!person) return page(401, `Sign in as ${about.startedBy} to finish.`);
      if (person.id !== about.expected) {
        return page(
          403,
          `You are signed in as ${person.username}, but ${about.startedBy} started this authorization: only they can finish it. Nothing was connected.`,
        );
      }
      return finished(params, person.id);
    },
  };
}
export type Callback = ReturnType<typeof createCallback>;
