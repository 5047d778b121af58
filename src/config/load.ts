import type { TracingSettings } from "../observability/tracing";
import { VERSION } from "../version";
import { Value } from "@sinclair/typebox/value";
import type { TObject } from "@sinclair/typebox";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { builtinPresets, type OwnProgram } from "../presets/builtin";
import { ownExecutable } from "../executable";
import type { Preset } from "../presets/model";
import { parsePresets } from "../presets/parse";
import { parseTrustedProxies, type TrustedProxies } from "../security/client-address";
import { ConfigSchema, LIST_SETTINGS, SECRET_SETTINGS, type RawConfig } from "./schema";

export type Config = {
  server: {
    host: string;
    port: number;
    publicUrl: string | undefined;
    shutdownTimeoutMs: number;
    /** PEM files (absolute paths) to serve https with, read at start and again on SIGHUP; both or neither. */
    tls: { certFile: string; keyFile: string } | undefined;
    /** Peers whose X-Forwarded-For / Forwarded name the client (security/client-address.ts). */
    trustedProxies: TrustedProxies;
  };
  database: { path: string; url: string | undefined; maxConnections: number; checkpointThread: boolean };
  /** Base64 key from SECRETS__KEY, or the key file to read or create. */
  secrets: { key: string | undefined; keyFile: string | undefined; newKey: string | undefined };
  auth: {
    adminUsername: string;
    adminPassword: string | undefined;
    maxFailures: number;
    maxAddressFailures: number;
    failureWindowMs: number;
    maxTokensPerUser: number;
  };
  connector: { maxPerUser: number };
  /** Virtual servers (docs/interface.md §9): how many one user may have. */
  virtual: { maxPerUser: number; memberTimeoutMs: number; maxSessionsPerUser: number };
  presets: readonly Preset[];
  /** Managed stdio servers: where they run; the local driver's sandbox (undefined: bwrap where it runs) and process caps. */
  runtime: {
    driver: "local" | "kubernetes";
    sandbox: "bwrap" | "none" | undefined;
    maxProcessesPerUser: number;
    maxProcesses: number;
  };
  kubernetes: { namespace: string; gatewayImage: string; serviceAccess: "dns" | "proxy" };
  log: { level: "debug" | "info" | "warn" | "error" };
  security: { blockPrivateNetworks: boolean };
  oauth: { allowedRedirectOrigins: string[] };
  authServer: { maxRegistrations: number; maxRegistrationsPerAddress: number };
  /** Origins whose browser pages may call the proxy and the OAuth endpoints ("*": any). */
  cors: { allowedOrigins: string[] };
  /** OpenTelemetry traces, from the standard OTEL_* variables; undefined: off. */
  tracing: TracingSettings | undefined;
  /** The proxy's audit trail (docs/behaviour.md "Audit trail"). */
  audit: { enabled: boolean; capture: boolean; retentionMs: number; maxRecords: number };
  /** WEBHOOKS__URLS get every connector event, signed with WEBHOOKS__SECRET. */
  webhooks: { urls: string[]; secret: string | undefined };
  api: { maxBodyBytes: number };
  proxy: {
    maxBodyBytes: number;
    maxMessageBytes: number;
    heldBytesPerUser: number;
    heldBytesTotal: number;
    upstreamTimeoutMs: number;
    /** How long a bridged call waits for the client's answer to its server's question (era-bridge/, gateway/parked.ts). */
    inputTimeoutMs: number;
    maxStreamsPerUser: number;
    maxStreamsPerConnector: number;
  };
  scheduler: { intervalMs: number };
  a2a: { cardRefreshMs: number };
  /** RATE__USER_REQUESTS_PER_MINUTE: every user's ceiling on proxied MCP requests unless an administrator set theirs; undefined: none. */
  rate: { userRequestsPerMinute: number | undefined };
  /**
   * METRICS__TOKEN: when set, /metrics wants it as a bearer token. METRICS__TOOLS_PER_CONNECTOR: the tools per connector
   * with series of their own (the rest count as `other`).
   */
  metrics: { token: string | undefined; toolsPerConnector: number };
};

/** A bad setting: the message names the variable. `serve` prints it and exits 2. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
  }
}

const envName = (path: string[]) => path.join("__").toUpperCase();

/** All environment variable names this service reads, in schema order. */
export function settingNames(): string[] {
  const names: string[] = [];
  for (const [section, schema] of Object.entries(ConfigSchema.properties)) {
    for (const key of Object.keys((schema as TObject).properties)) names.push(envName([section, key]));
  }
  return names;
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const known = new Set(settingNames());
  const sections = Object.keys(ConfigSchema.properties).map((s) => `${s.toUpperCase()}__`);
  for (const name of Object.keys(env)) {
    if (sections.some((p) => name.startsWith(p)) && !known.has(name)) {
      throw new ConfigError(name, "unknown setting (see docs/configuration.md for the list)");
    }
  }

  const raw: Record<string, Record<string, unknown>> = {};
  for (const [section, schema] of Object.entries(ConfigSchema.properties)) {
    raw[section] = {};
    for (const key of Object.keys((schema as TObject).properties)) {
      const value = env[envName([section, key])];
      if (value === undefined || value === "") continue;
      raw[section]![key] = LIST_SETTINGS.has(envName([section, key]))
        ? value
            .split(",")
            .map((s) => s.trim())
            .filter(Boolean)
        : value;
    }
  }
  const withDefaults = Value.Default(ConfigSchema, Value.Convert(ConfigSchema, raw));
  const first = Value.Errors(ConfigSchema, withDefaults).First();
  if (first) {
    const path = first.path.split("/").filter(Boolean);
    throw badSetting(env, path[0]!, path[1]!, first.message);
  }
  return finish(withDefaults as RawConfig, env);
}

/** The setting's schema (undefined for a path the schema does not have). */
const settingSchema = (section: string, key: string) =>
  (ConfigSchema.properties as Record<string, TObject>)[section]?.properties[key];

/** Why a setting's value is refused: what it must be, and what was given. */
function badSetting(env: Record<string, string | undefined>, section: string, key: string, fallback: string): ConfigError {
  const variable = envName([section, key]);
  const given = env[variable];
  const description = settingSchema(section, key)?.description;
  const expected = description ? `must be ${description}` : fallback;
  // A secret's value is never echoed: the error goes to the terminal and the log.
  return new ConfigError(
    variable,
    `${expected}${given === undefined || SECRET_SETTINGS.has(variable) ? "" : ` (got "${given}")`}`,
  );
}

/**
 * One setting read alone, converted, defaulted and checked by the schema as loadConfig does: for a command that needs
 * only it, such as the Kubernetes gateway sidecar (cli/gateway.ts), whose environment holds none of the service's others.
 */
export function loadSetting<S extends keyof RawConfig, K extends keyof RawConfig[S] & string>(
  env: Record<string, string | undefined>,
  section: S,
  key: K,
): RawConfig[S][K] {
  const schema = settingSchema(section, key)!;
  const given = env[envName([section, key])];
  const value = given === undefined || given === "" ? Value.Default(schema, undefined) : Value.Convert(schema, given);
  if (!Value.Check(schema, value)) throw badSetting(env, section, key, "is not valid");
  return value as RawConfig[S][K];
}

/** The namespace of the pod the service runs in, when it runs in one. */
function inClusterNamespace(): string | undefined {
  try {
    return readFileSync("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The [OpenTelemetry SDK environment variables](https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/)
 * that concern an OTLP/HTTP trace exporter. Tracing is on when an endpoint is given, unless the SDK is disabled.
 */
function tracingSettings(env: Record<string, string | undefined>): TracingSettings | undefined {
  if (env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none") return undefined;
  const tracesEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!tracesEndpoint && !endpoint) return undefined;
  const url = tracesEndpoint || `${endpoint!.replace(/\/+$/, "")}/v1/traces`;
  if (!URL.canParse(url))
    throw new ConfigError(
      tracesEndpoint ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT",
      "must be an http(s) URL",
    );
  // "key=value,key2=value2", values URL-encoded (the specification's format).
  const headers: Record<string, string> = {};
  for (const pair of (env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS ?? "").split(",")) {
    const eq = pair.indexOf("=");
    if (eq > 0) headers[decodeURIComponent(pair.slice(0, eq).trim())] = decodeURIComponent(pair.slice(eq + 1).trim());
  }
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY ?? 5000);
  return {
    url,
    headers,
    serviceName: env.OTEL_SERVICE_NAME || "connector-service",
    serviceVersion: VERSION,
    scheduleDelayMs: Number.isFinite(delay) && delay >= 0 ? delay : 5000,
  };
}

/**
 * What runs this program as a managed server (the demo preset): on Kubernetes the service's own image, whose PATH has
 * it (Containerfile); locally the executable running now — never a PATH lookup, which could find another version.
 */
function ownProgram(raw: RawConfig): OwnProgram {
  if (raw.runtime.driver === "kubernetes" && raw.kubernetes.gateway_image)
    return { image: raw.kubernetes.gateway_image, command: ["connector-service"] };
  return { image: `connector-service:${VERSION}`, command: ownExecutable().argv };
}

function finish(raw: RawConfig, env: Record<string, string | undefined>): Config {
  let presets: readonly Preset[] = builtinPresets(ownProgram(raw));
  if (raw.connector.presets !== undefined) {
    try {
      presets = parsePresets(raw.connector.presets, presets);
    } catch (e) {
      throw new ConfigError("CONNECTOR__PRESETS", (e as Error).message);
    }
  }
  if (raw.runtime.driver === "kubernetes" && !raw.kubernetes.gateway_image) {
    throw new ConfigError(
      "KUBERNETES__GATEWAY_IMAGE",
      "must be set when RUNTIME__DRIVER=kubernetes (the connector-service image the gateway sidecar runs)",
    );
  }
  if (raw.secrets.key !== undefined) {
    const bytes = Buffer.from(raw.secrets.key, "base64");
    if (bytes.length !== 32) throw new ConfigError("SECRETS__KEY", "must be the base64 encoding of exactly 32 bytes");
  }
  const { tls_cert_file: certFile, tls_key_file: keyFile } = raw.server;
  if (certFile !== undefined && keyFile === undefined) {
    throw new ConfigError(
      "SERVER__TLS_KEY_FILE",
      "must be set when SERVER__TLS_CERT_FILE is (the certificate's private key, PEM)",
    );
  }
  if (keyFile !== undefined && certFile === undefined) {
    throw new ConfigError("SERVER__TLS_CERT_FILE", "must be set when SERVER__TLS_KEY_FILE is (the certificate chain, PEM)");
  }
  if (raw.webhooks.urls.length > 0 && raw.webhooks.secret === undefined) {
    throw new ConfigError("WEBHOOKS__SECRET", "must be set when WEBHOOKS__URLS is (every delivery is signed with it)");
  }
  let trustedProxies: TrustedProxies;
  try {
    trustedProxies = parseTrustedProxies(raw.server.trusted_proxies);
  } catch (e) {
    throw new ConfigError("SERVER__TRUSTED_PROXIES", (e as Error).message);
  }
  // Spraying many user names from one address is held at a much higher ceiling than one name's guesses.
  const maxAddressFailures = raw.auth.max_failures_per_address ?? 10 * raw.auth.max_failures;
  if (maxAddressFailures < raw.auth.max_failures) {
    throw new ConfigError(
      "AUTH__MAX_FAILURES_PER_ADDRESS",
      `must be at least AUTH__MAX_FAILURES (${raw.auth.max_failures}): it caps all user names from an address together`,
    );
  }
  const inMemory = raw.database.path === ":memory:";
  const dbPath = inMemory ? ":memory:" : resolve(raw.database.path);
  // Replicas share the database, so they must share the key: a key file beside one replica would not do.
  if (raw.database.url !== undefined && raw.secrets.key === undefined) {
    throw new ConfigError("SECRETS__KEY", "must be set when DATABASE__URL is (every replica seals and opens with the same key)");
  }
  return {
    server: {
      host: raw.server.host,
      port: raw.server.port,
      publicUrl: raw.server.public_url?.replace(/\/+$/, ""),
      shutdownTimeoutMs: raw.server.shutdown_timeout_seconds * 1000,
      // Resolved now: a reload on SIGHUP reads the same files whatever the working directory is then.
      tls:
        certFile !== undefined && keyFile !== undefined ? { certFile: resolve(certFile), keyFile: resolve(keyFile) } : undefined,
      trustedProxies,
    },
    database: {
      path: dbPath,
      url: raw.database.url,
      maxConnections: raw.database.max_connections,
      checkpointThread: raw.database.checkpoint_thread,
    },
    secrets: {
      key: raw.secrets.key,
      keyFile: inMemory || raw.database.url !== undefined ? undefined : join(dirname(dbPath), "secret.key"),
      newKey: raw.secrets.new_key,
    },
    auth: {
      adminUsername: raw.auth.admin_username,
      adminPassword: raw.auth.admin_password,
      maxFailures: raw.auth.max_failures,
      maxAddressFailures,
      failureWindowMs: raw.auth.failure_window_seconds * 1000,
      maxTokensPerUser: raw.auth.max_tokens_per_user,
    },
    connector: { maxPerUser: raw.connector.max_per_user },
    virtual: {
      maxPerUser: raw.virtual.max_per_user,
      memberTimeoutMs: raw.virtual.member_timeout_seconds * 1000,
      maxSessionsPerUser: raw.virtual.max_sessions_per_user,
    },
    presets,
    runtime: {
      driver: raw.runtime.driver,
      sandbox: raw.runtime.sandbox,
      maxProcessesPerUser: raw.runtime.max_processes_per_user,
      maxProcesses: raw.runtime.max_processes,
    },
    kubernetes: {
      namespace: raw.kubernetes.namespace ?? inClusterNamespace() ?? "default",
      gatewayImage: raw.kubernetes.gateway_image ?? "",
      // In a pod, KUBERNETES_SERVICE_HOST is set: cluster DNS reaches the Services; outside, the API server's proxy.
      serviceAccess: raw.kubernetes.service_access ?? (env.KUBERNETES_SERVICE_HOST ? "dns" : "proxy"),
    },
    log: { level: raw.log.level },
    security: { blockPrivateNetworks: raw.security.block_private_networks },
    oauth: { allowedRedirectOrigins: raw.oauth.allowed_redirect_origins.map((o) => new URL(o).origin) },
    authServer: {
      maxRegistrations: raw.authserver.max_registrations,
      maxRegistrationsPerAddress: raw.authserver.max_registrations_per_address,
    },
    cors: { allowedOrigins: raw.cors.allowed_origins.map((o) => (o === "*" ? o : new URL(o).origin)) },
    webhooks: { urls: raw.webhooks.urls, secret: raw.webhooks.secret },
    tracing: tracingSettings(env),
    audit: {
      enabled: raw.audit.enabled,
      capture: raw.audit.capture === "arguments",
      retentionMs: raw.audit.retention_days * 86_400_000,
      maxRecords: raw.audit.max_records,
    },
    api: { maxBodyBytes: raw.api.max_body_bytes },
    proxy: {
      maxBodyBytes: raw.proxy.max_body_bytes,
      maxMessageBytes: raw.proxy.max_message_bytes,
      heldBytesPerUser: raw.proxy.held_bytes_per_user,
      heldBytesTotal: raw.proxy.held_bytes_total,
      upstreamTimeoutMs: raw.proxy.upstream_timeout_seconds * 1000,
      inputTimeoutMs: raw.proxy.input_timeout_seconds * 1000,
      maxStreamsPerUser: raw.proxy.max_streams_per_user,
      maxStreamsPerConnector: raw.proxy.max_streams_per_connector,
    },
    scheduler: { intervalMs: raw.scheduler.interval_seconds * 1000 },
    a2a: { cardRefreshMs: raw.a2a.card_refresh_seconds * 1000 },
    rate: { userRequestsPerMinute: raw.rate.user_requests_per_minute },
    metrics: { token: raw.metrics.token, toolsPerConnector: raw.metrics.tools_per_connector },
  };
}

/** The effective settings as `VARIABLE: value` with secrets masked, for the start-up log. */
/** A database URL fit for a log: its password masked. */
function withoutPassword(url: string): string {
  if (!URL.canParse(url)) return "(not a URL)";
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "********";
  return parsed.href;
}

export function describeConfig(env: Record<string, string | undefined>, config: Config): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of settingNames()) {
    const value = env[name];
    if (value === undefined || value === "") continue;
    out[name] = SECRET_SETTINGS.has(name)
      ? "********"
      : name === "CONNECTOR__PRESETS"
        ? `${config.presets.length} presets`
        : name === "DATABASE__URL"
          ? withoutPassword(value)
          : value;
  }
  return out;
}
