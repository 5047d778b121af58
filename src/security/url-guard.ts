import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { UnresolvableHost, UnsafeUrl } from "../http/fetch";
import { checkAddress, checkHostName } from "./addresses";

export type UrlGuard = {
  /** Resolves the URL's host and throws UnsafeUrl when any address it resolves to is refused. */
  check(url: URL): Promise<void>;
  /** True when the host was checked and allowed within the cache time: no need to call `check`. */
  recentlyAllowed(url: URL): boolean;
  /** The same check without DNS: for a URL's literal host (at create time). */
  checkLiteral(url: URL): void;
};

export type UrlGuardOptions = {
  blockPrivate: boolean;
  resolve?: (host: string) => Promise<string[]>;
  clock?: () => number;
  /** Resolutions are reused this long; each new one is checked again. */
  cacheMs?: number;
};

const systemResolve = async (host: string) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Every URL the service fetches goes through here: user URLs at connect and proxy time, and (with OAuth)
 * the URLs servers choose. Under Bun an HTTP agent cannot pin DNS, so the guard resolves and checks every
 * address itself; a resolution is reused for `cacheMs` to keep it off the proxy's hot path.
 */
export function createUrlGuard({ blockPrivate, resolve = systemResolve, clock = Date.now, cacheMs = 30_000 }: UrlGuardOptions): UrlGuard {
  const cache = new Map<string, { until: number; verdict: Error | undefined }>();

  function checkLiteral(url: URL): void {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const byName = checkHostName(host);
    if (!byName.allowed) throw new UnsafeUrl(byName.reason);
    if (isIP(host)) {
      const verdict = checkAddress(host, blockPrivate);
      if (!verdict.allowed) throw new UnsafeUrl(verdict.reason);
    } else if (blockPrivate && (host === "localhost" || host.endsWith(".localhost"))) {
      throw new UnsafeUrl(`${host} is a loopback name (SECURITY__BLOCK_PRIVATE_NETWORKS=true)`);
    }
  }

  async function resolveAndCheck(host: string): Promise<Error | undefined> {
    let addresses: string[];
    try {
      addresses = await resolve(host);
    } catch (e) {
      return new UnresolvableHost(`cannot resolve ${host}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    if (addresses.length === 0) return new UnresolvableHost(`${host} resolves to no address`);
    for (const address of addresses) {
      const verdict = checkAddress(address, blockPrivate);
      if (!verdict.allowed) return new UnsafeUrl(`${host} resolves to ${verdict.reason}`);
    }
    return undefined;
  }

  return {
    checkLiteral,
    recentlyAllowed(url) {
      const entry = cache.get(url.hostname);
      return entry !== undefined && entry.verdict === undefined && entry.until > clock();
    },
    async check(url) {
      const now = clock();
      let entry = cache.get(url.hostname);
      if (!entry || entry.until <= now) {
        checkLiteral(url);
        const host = url.hostname.replace(/^\[|\]$/g, "");
        entry = { until: now + cacheMs, verdict: isIP(host) ? undefined : await resolveAndCheck(host) };
        // Failures to resolve are not remembered: the next request tries again.
        if (entry.verdict instanceof UnresolvableHost) cache.delete(url.hostname);
        else cache.set(url.hostname, entry);
      }
      if (entry.verdict) throw entry.verdict;
    },
  };
}
