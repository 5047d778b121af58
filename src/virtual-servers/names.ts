/**
 * The names a virtual server exposes (docs/interface.md §9.2): a pure function of (member prefix, original name),
 * never of which other members exist. Two members producing one name, or a name too long for clients, is left out and
 * reported — never guessed, never routed to either member.
 */

/** What an explicit prefix may be: lower-case letters, digits and `-`, starting with a letter or digit; or "". */
export const PREFIX_PATTERN = "^(?:[a-z0-9][a-z0-9-]{0,23})?$";
export const MAX_PREFIX_LENGTH = 24;
/**
 * The longest exposed tool or prompt name. MCP 2025-11-25 (server/tools, "Tool names") allows 128 characters, but
 * clients commonly check `^[a-zA-Z0-9_-]{1,64}$`; a longer name would make them refuse the whole listing.
 */
export const MAX_EXPOSED_NAME_LENGTH = 64;
/** Between prefix and name: `_` twice cannot occur in a prefix, so the first `__` always ends it. */
export const SEPARATOR = "__";

/**
 * The prefix a member gets when none is given: the connector's name lower-cased, every run of characters outside
 * `[a-z0-9]` turned into one `-`, no `-` at either end, at most 24 characters; the id's first 8 characters when
 * nothing is left.
 */
export function defaultPrefix(name: string | null | undefined, id: string): string {
  const slug = (name ?? "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MAX_PREFIX_LENGTH)
    .replace(/-+$/, "");
  return slug || id.slice(0, 8).toLowerCase();
}

/** A member's tool or prompt as clients see it; `prefix: ""` keeps the member's own name. */
export const exposedName = (prefix: string, original: string): string => (prefix ? `${prefix}${SEPARATOR}${original}` : original);

export type NameKind = "tool" | "prompt" | "resource" | "resource_template";
/** A name left out of a virtual server's listings, and the members that offered it. */
export type NameConflict = { kind: NameKind; name: string; members: string[] };
/** Where an admitted name goes: the member (its connector id) and the member's own name (or URI). */
export type Route = { member: string; original: string };
/** One member's offer: its connector id, its prefix, and its own names (URIs for resources and templates). */
export type MemberNames = { member: string; prefix: string; names: readonly string[] };
/**
 * What a listing shows and a call may reach: the admitted names in code-unit order (the order of merged pages), each
 * name's route, and what was left out.
 */
export type Admission = { names: readonly string[]; routes: ReadonlyMap<string, Route>; conflicts: NameConflict[] };

/** Resources and templates keep their URIs (so `ui://` and `_meta` references stay valid); tools and prompts are prefixed. */
const keepsItsName = (kind: NameKind) => kind === "resource" || kind === "resource_template";

/**
 * Admits each member's names as exposed names. Left out and reported: a tool or prompt name longer than
 * MAX_EXPOSED_NAME_LENGTH, and a name (or URI) two or more members produce. A member listing a name twice offers it once.
 */
export function admitNames(kind: NameKind, members: readonly MemberNames[]): Admission {
  const keeps = keepsItsName(kind);
  /** Each name's first route, and every route of a name that two or more members produce. */
  const first = new Map<string, Route>();
  const shared = new Map<string, Route[]>();
  const tooLong = new Map<string, string>();
  for (const { member, prefix, names } of members) {
    for (const original of new Set(names)) {
      const name = keeps ? original : exposedName(prefix, original);
      if (!keeps && name.length > MAX_EXPOSED_NAME_LENGTH) {
        tooLong.set(`${member}\n${name}`, name);
        continue;
      }
      const route = { member, original };
      const earlier = first.get(name);
      if (earlier === undefined) first.set(name, route);
      else shared.get(name)?.push(route) ?? shared.set(name, [earlier, route]);
    }
  }
  const conflicts: NameConflict[] = [];
  const admitted: string[] = [];
  for (const name of first.keys()) {
    const routes = shared.get(name);
    if (routes) conflicts.push({ kind, name, members: routes.map((route) => route.member) });
    else admitted.push(name);
  }
  for (const [key, name] of tooLong) conflicts.push({ kind, name, members: [key.slice(0, key.indexOf("\n"))] });
  // The default sort compares UTF-16 code units, compareNames' order, without calling a comparator 5,000 times.
  admitted.sort();
  conflicts.sort((a, b) => compareNames(a.name, b.name));
  const routes = new Map<string, Route>();
  for (const name of admitted) routes.set(name, first.get(name)!);
  return { names: admitted, routes, conflicts };
}

/** Whether two offers are the same: each member's names as they were, in the order they were listed. */
function sameOffers(a: readonly MemberNames[], b: readonly MemberNames[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const [x, y] = [a[i]!, b[i]!];
    if (x.member !== y.member || x.prefix !== y.prefix || x.names.length !== y.names.length) return false;
    for (let j = 0; j < x.names.length; j++) if (x.names[j] !== y.names[j]) return false;
  }
  return true;
}

/**
 * admitNames, remembering the last admission of each key (a virtual server's list): the same offers again get the
 * same names, routes and conflicts without admitting them again (for 10 members × 50 tools that was ~8 % of a
 * listing's CPU: bench/RESULTS.md), and the sessions of a virtual server share them rather than each holding a copy
 * (~90 KiB for 500 tools). Each call still gets an Admission of its own: a listing's identity (search.ts keeps its index
 * by it). Bounded: forgotten whole past `max` keys.
 */
export function rememberingAdmitter(max: number) {
  const last = new Map<string, { offers: readonly MemberNames[]; admission: Admission }>();
  return (key: string, kind: NameKind, offers: readonly MemberNames[]): Admission => {
    const known = last.get(key);
    if (known && sameOffers(known.offers, offers)) return { ...known.admission };
    const admission = admitNames(kind, offers);
    if (!last.has(key) && last.size >= max) last.clear();
    last.set(key, { offers, admission });
    return admission;
  };
}

/** Code-unit order: the same on every replica and in every locale, so a cursor's position means one place. */
export const compareNames = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The member a client's name reaches, and the member's own name; undefined for a name that was not admitted — hidden,
 * in conflict or unknown alike (one admission decision for listing and calling).
 */
export const resolveName = (admission: Admission, name: string): Route | undefined => admission.routes.get(name);
