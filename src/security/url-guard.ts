import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { UnresolvableHost, UnsafeUrl } from "../http/fetch";
import { checkAddress, checkHostName } from "./addresses";

export type UrlGuard = {
  /**
   * The addresses a connection to the URL may go to: its host resolved once (or a resolution at most `cacheMs` old
   * reused) with every address checked; a literal address is its own. Throws UnsafeUrl or UnresolvableHost.
   */
  addresses(url: URL): Promise<readonly string[]>;
  /** The same without waiting, when a checked resolution is at hand (the proxy's hot path); else undefined. */
  addressesNow(url: URL): readonly string[] | undefined;
  /** Checks the URL's host, resolving a name; throws as `addresses` does. */
  check(url: URL): Promise<void>;
  /** The same check without DNS: for a URL's literal host (at create time). */
  checkLiteral(url: URL): void;
};

export type UrlGuardOptions = {
  blockPrivate: boolean;
  resolve?: (host: string) => Promise<string[]>;
  clock?: () => number;
  /** A resolution is reused this long: the connections made in that time go to the addresses it checked. */
  cacheMs?: number;
};

const systemResolve = async (host: string) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** A URL's host without the brackets of an IPv6 literal. */
export const bareHost = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/**
 * Every URL the service fetches goes through here: user URLs at connect and proxy time, and (with OAuth) the URLs
 * servers choose. The guard resolves a name once and checks every address; the caller then connects to one of those
 * very addresses (security/guarded-fetch.ts), never resolving the name again. A verdict is therefore never older than
 * the resolution it judged, and a name that answers differently the next time (DNS rebinding) changes nothing
 * (under Bun an HTTP agent cannot pin DNS, so the pinning is done here).
 */
export function createUrlGuard({
  blockPrivate,
  resolve = systemResolve,
  clock = Date.now,
  cacheMs = 30_000,
}: UrlGuardOptions): UrlGuard {
  const cache = new Map<string, { until: number; addresses: readonly string[] } | { until: number; refused: Error }>();

  function checkLiteral(url: URL): void {
    const host = bareHost(url);
    const byName = checkHostName(host);
    if (!byName.allowed) throw new UnsafeUrl(byName.reason);
    if (isIP(host)) {
      const verdict = checkAddress(host, blockPrivate);
      if (!verdict.allowed) throw new UnsafeUrl(verdict.reason);
    } else if (blockPrivate && (host === "localhost" || host.endsWith(".localhost"))) {
      throw new UnsafeUrl(`${host} is a loopback name (SECURITY__BLOCK_PRIVATE_NETWORKS=true)`);
    }
  }

  /** Every address of one resolution, checked; a refusal if any address is refused (a name is as safe as its worst answer). */
  async function resolveAndCheck(host: string): Promise<readonly string[] | Error> {
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
    return addresses;
  }

  function addressesNow(url: URL): readonly string[] | undefined {
    const entry = cache.get(url.hostname);
    return entry && "addresses" in entry && entry.until > clock() ? entry.addresses : undefined;
  }

  async function addresses(url: URL): Promise<readonly string[]> {
    const now = clock();
    const cached = cache.get(url.hostname);
    if (cached && cached.until > now) {
      if ("refused" in cached) throw cached.refused;
      return cached.addresses;
    }
    checkLiteral(url);
    const host = bareHost(url);
    const result = isIP(host) ? [host] : await resolveAndCheck(host);
    // Failures to resolve are not remembered: the next request tries again.
    if (result instanceof UnresolvableHost) {
      cache.delete(url.hostname);
      throw result;
    }
    cache.set(
      url.hostname,
      result instanceof Error ? { until: now + cacheMs, refused: result } : { until: now + cacheMs, addresses: result },
    );
    if (result instanceof Error) throw result;
    return result;
  }

  return {
    checkLiteral,
    addresses,
    addressesNow,
    async check(url) {
      await addresses(url);
    },
  };
}
