import { VERSION } from "../version";

/** What a person starting the service needs to know first, all of it known once the start is done. */
export type StartFacts = {
  publicUrl: string;
  admin: { username: string; generated: string | undefined; fromSetting: boolean };
  /** The SQLite file, ":memory:", or undefined for PostgreSQL. */
  database: string | undefined;
  /** The sealing key's file, or how the key is given instead. */
  key: { origin: "setting" | "file-created" | "file" | "ephemeral"; file: string | undefined };
};

/**
 * The start-up banner, for a person at a terminal (`serve` prints it when stdout is one; JSON log lines are for
 * programs): where the console and the API documents are, how to sign in, and where the data lives. Plain text, no
 * colour codes: it may be copied into a ticket.
 */
export function formatBanner(facts: StartFacts): string {
  const { admin } = facts;
  const password = admin.generated
    ? `${admin.generated}   (generated now and shown this once: keep it)`
    : admin.fromSetting
      ? "the value of AUTH__ADMIN_PASSWORD"
      : "the one shown at the first start (lost: stop the service, run connector-service reset-admin-password)";
  const data =
    facts.database === undefined
      ? "PostgreSQL (DATABASE__URL)"
      : facts.database === ":memory:"
        ? "in memory: gone when the service stops (set DATABASE__PATH to keep it)"
        : facts.database;
  const key =
    facts.key.origin === "setting"
      ? "SECRETS__KEY"
      : facts.key.origin === "ephemeral"
        ? "in memory, for this run only"
        : `${facts.key.file} (back it up with the database: without it, stored credentials cannot be opened)`;
  const rows = [
    ["Console", `${facts.publicUrl}/`],
    ["API docs", `${facts.publicUrl}/docs   (Swagger UI; OpenAPI at ${facts.publicUrl}/openapi.json)`],
    ["User", admin.username],
    ["Password", password],
    ["Database", data],
    ["Sealing key", key],
  ];
  return [
    "",
    `  connector-service ${VERSION} is running`,
    "",
    ...rows.map(([name, value]) => `  ${name!.padEnd(13)}${value}`),
    "",
    '  First connector: in the console, "Add connector", preset "Demo server — works offline, no sign-in".',
    "  Log lines (JSON) follow. Stop with Ctrl+C.",
    "",
  ].join("\n");
}
