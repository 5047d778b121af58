import { Type as t } from "@sinclair/typebox";

/** Each `description` completes "must be …" in a start-up error. */
const Origin = t.String({ pattern: "^https?://[^/?#]+$/?$" });

/**
 * Every setting, nested as its environment variable is (`SERVER__PUBLIC_URL` is `server.public_url`).
 * Defaults that depend on other settings (public URL, key file) are filled in by `loadConfig`.
 */
export const ConfigSchema = t.Object({
  server: t.Object({
    host: t.String({ minLength: 1, default: "127.0.0.1", description: "a host name or IP address" }),
    port: t.Integer({ minimum: 0, maximum: 65535, default: 8000, description: "an integer from 0 to 65535" }),
    public_url: t.Optional(
      t.String({ pattern: "^https?://[^/?#]+(/[^?#]*)?$", description: "an absolute http(s) URL without query or fragment" }),
    ),
    shutdown_timeout_seconds: t.Number({
      minimum: 0,
      maximum: 3600,
      default: 25,
      description: "a number of seconds from 0 to 3600",
    }),
    tls_cert_file: t.Optional(t.String({ minLength: 1, description: "the path of a PEM certificate (chain)" })),
    tls_key_file: t.Optional(t.String({ minLength: 1, description: "the path of a PEM private key" })),
    trusted_proxies: t.Array(t.String(), {
      default: [],
      description: "a comma-separated list of IPv4 or IPv6 CIDRs (10.0.0.0/8, fd00::/8) or addresses",
    }),
  }),
  database: t.Object({
    path: t.String({ minLength: 1, default: "./data/connector-service.db", description: "a file path or :memory:" }),
    url: t.Optional(t.String({ pattern: "^postgres(ql)?://", description: "a postgres:// URL" })),
    max_connections: t.Integer({ minimum: 1, maximum: 1000, default: 10, description: "an integer from 1 to 1000" }),
    checkpoint_thread: t.Boolean({ default: true, description: "true or false" }),
  }),
  secrets: t.Object({
    key: t.Optional(t.String({ minLength: 1, description: "the base64 encoding of 32 bytes" })),
    new_key: t.Optional(t.String({ minLength: 1, description: "the base64 encoding of 32 bytes" })),
  }),
  auth: t.Object({
    admin_username: t.String({
      pattern: "^[A-Za-z0-9._@-]{1,64}$",
      default: "admin",
      description: "1 to 64 letters, digits or . _ @ -",
    }),
    admin_password: t.Optional(t.String({ minLength: 8, maxLength: 1024, description: "8 to 1024 characters" })),
    max_failures: t.Integer({ minimum: 1, maximum: 100_000, default: 10, description: "an integer from 1 to 100000" }),
    max_failures_per_address: t.Optional(
      t.Integer({ minimum: 1, maximum: 1_000_000, description: "an integer from 1 to 1000000" }),
    ),
    failure_window_seconds: t.Number({
      minimum: 1,
      maximum: 86_400,
      default: 60,
      description: "a number of seconds from 1 to 86400",
    }),
    max_tokens_per_user: t.Integer({ minimum: 1, maximum: 100_000, default: 100, description: "an integer from 1 to 100000" }),
  }),
  connector: t.Object({
    presets: t.Optional(t.String({ description: "a JSON array of presets" })),
    max_per_user: t.Integer({ minimum: 1, maximum: 1_000_000, default: 1000, description: "an integer from 1 to 1000000" }),
  }),
  virtual: t.Object({
    max_per_user: t.Integer({ minimum: 1, maximum: 100_000, default: 100, description: "an integer from 1 to 100000" }),
    member_timeout_seconds: t.Integer({ minimum: 1, maximum: 300, default: 5, description: "a number of seconds from 1 to 300" }),
    max_sessions_per_user: t.Integer({
      minimum: 1,
      maximum: 100_000,
      default: 200,
      description: "an integer from 1 to 100000",
    }),
  }),
  runtime: t.Object({
    driver: t.Union([t.Literal("local"), t.Literal("kubernetes")], { default: "local", description: "local or kubernetes" }),
    // Unset: bwrap where it runs, else none with a warning (runtime/sandbox.ts).
    sandbox: t.Optional(t.Union([t.Literal("bwrap"), t.Literal("none")], { description: "bwrap or none" })),
    max_processes_per_user: t.Integer({ minimum: 1, maximum: 100_000, default: 8, description: "an integer from 1 to 100000" }),
    max_processes: t.Integer({ minimum: 1, maximum: 100_000, default: 32, description: "an integer from 1 to 100000" }),
  }),
  kubernetes: t.Object({
    namespace: t.Optional(
      t.String({ pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength: 63, description: "a Kubernetes namespace name" }),
    ),
    gateway_image: t.Optional(t.String({ minLength: 1, description: "a container image reference" })),
    service_access: t.Optional(t.Union([t.Literal("dns"), t.Literal("proxy")], { description: "dns or proxy" })),
  }),
  log: t.Object({
    level: t.Union([t.Literal("debug"), t.Literal("info"), t.Literal("warn"), t.Literal("error")], {
      default: "info",
      description: "debug, info, warn or error",
    }),
  }),
  security: t.Object({ block_private_networks: t.Boolean({ default: false, description: "true or false" }) }),
  oauth: t.Object({
    allowed_redirect_origins: t.Array(Origin, {
      default: [],
      description: "a comma-separated list of origins (scheme://host[:port])",
    }),
  }),
  authserver: t.Object({
    max_registrations: t.Integer({ minimum: 1, maximum: 1_000_000, default: 1000, description: "an integer from 1 to 1000000" }),
    max_registrations_per_address: t.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: 20,
      description: "an integer from 1 to 1000000",
    }),
  }),
  audit: t.Object({
    enabled: t.Boolean({ default: true, description: "true or false" }),
    capture: t.Union([t.Literal("off"), t.Literal("arguments")], { default: "off", description: "off or arguments" }),
    retention_days: t.Number({ minimum: 1, maximum: 3650, default: 30, description: "a number of days from 1 to 3650" }),
    max_records: t.Integer({
      minimum: 1000,
      maximum: 1_000_000_000,
      default: 1_000_000,
      description: "an integer from 1000 to 1000000000",
    }),
  }),
  webhooks: t.Object({
    urls: t.Array(t.String({ pattern: "^https?://[^\\s]+$" }), {
      default: [],
      description: "a comma-separated list of http(s) URLs",
    }),
    secret: t.Optional(
      t.String({
        minLength: 24,
        maxLength: 1024,
        description: "at least 24 characters (a whsec_ secret: base64 after the prefix)",
      }),
    ),
  }),
  cors: t.Object({
    allowed_origins: t.Array(t.Union([Origin, t.Literal("*")]), {
      default: ["*"],
      description: "* or a comma-separated list of origins (scheme://host[:port])",
    }),
  }),
  a2a: t.Object({
    card_refresh_seconds: t.Number({
      minimum: 10,
      maximum: 604_800,
      default: 3600,
      description: "a number of seconds from 10 to 604800",
    }),
  }),
  scheduler: t.Object({
    interval_seconds: t.Number({ minimum: 0.1, maximum: 3600, default: 5, description: "a number of seconds from 0.1 to 3600" }),
  }),
  api: t.Object({
    max_body_bytes: t.Integer({ minimum: 1024, default: 1024 * 1024, description: "an integer of at least 1024" }),
  }),
  proxy: t.Object({
    max_body_bytes: t.Integer({ minimum: 1024, default: 16 * 1024 * 1024, description: "an integer of at least 1024" }),
    max_message_bytes: t.Integer({ minimum: 1024, default: 4 * 1024 * 1024, description: "an integer of at least 1024" }),
    held_bytes_per_user: t.Integer({ minimum: 1024, default: 32 * 1024 * 1024, description: "an integer of at least 1024" }),
    held_bytes_total: t.Integer({ minimum: 1024, default: 256 * 1024 * 1024, description: "an integer of at least 1024" }),
    upstream_timeout_seconds: t.Number({
      minimum: 1,
      maximum: 3600,
      default: 60,
      description: "a number of seconds from 1 to 3600",
    }),
    input_timeout_seconds: t.Number({
      minimum: 1,
      maximum: 3600,
      default: 300,
      description: "a number of seconds from 1 to 3600",
    }),
    max_streams_per_user: t.Integer({ minimum: 1, maximum: 100_000, default: 500, description: "an integer from 1 to 100000" }),
    max_streams_per_connector: t.Integer({
      minimum: 1,
      maximum: 100_000,
      default: 200,
      description: "an integer from 1 to 100000",
    }),
  }),
  rate: t.Object({
    user_requests_per_minute: t.Optional(
      t.Integer({ minimum: 1, maximum: 1_000_000, description: "an integer from 1 to 1000000 (requests per minute)" }),
    ),
  }),
  metrics: t.Object({
    tools_per_connector: t.Integer({ minimum: 0, maximum: 1000, default: 20, description: "an integer from 0 to 1000" }),
    // A bearer token (RFC 6750 §2.1 sends it in a header): visible ASCII, long enough not to be guessed.
    token: t.Optional(
      t.String({ pattern: "^[\\x21-\\x7E]{16,1024}$", description: "16 to 1024 visible ASCII characters (no spaces)" }),
    ),
  }),
});
export type RawConfig = typeof ConfigSchema.static;

/** Settings whose values are masked when the effective configuration is logged. */
export const SECRET_SETTINGS = new Set([
  "SECRETS__KEY",
  "SECRETS__NEW_KEY",
  "AUTH__ADMIN_PASSWORD",
  "METRICS__TOKEN",
  "WEBHOOKS__SECRET",
]);

/** Settings read as comma-separated lists. */
export const LIST_SETTINGS = new Set([
  "SERVER__TRUSTED_PROXIES",
  "OAUTH__ALLOWED_REDIRECT_ORIGINS",
  "CORS__ALLOWED_ORIGINS",
  "WEBHOOKS__URLS",
]);
