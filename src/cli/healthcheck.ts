import { ConfigError, loadConfig } from "../config/load";

/** For the container HEALTHCHECK: exit 0 when /healthz answers 200 within 3 s, else 1. */
export async function healthcheck(env: Record<string, string | undefined>, url: string | undefined): Promise<number> {
  let base = url;
  if (!base) {
    try {
      const { server } = loadConfig(env);
      const host = server.host === "0.0.0.0" || server.host === "::" ? "127.0.0.1" : server.host;
      base = `${server.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${server.port}`;
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      process.stderr.write(`connector-service: configuration error: ${e.message}\n`);
      return 2;
    }
  }
  try {
    // The service's own port on this host: whether it answers is the question, not whose certificate it shows (a
    // certificate names the public host, not 127.0.0.1), so the certificate is not verified.
    const response = await fetch(`${base.replace(/\/+$/, "")}/healthz`, {
      signal: AbortSignal.timeout(3000),
      tls: { rejectUnauthorized: false },
    } as RequestInit);
    return response.ok ? 0 : 1;
  } catch {
    return 1;
  }
}
