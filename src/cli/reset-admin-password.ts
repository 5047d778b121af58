import { existsSync } from "node:fs";
import { ConfigError, loadConfig } from "../config/load";
import { openStore } from "../db/open";
import { createUserRepository } from "../users/repository";
import { createUserService, type AdminPasswordReset } from "../users/service";

/**
 * `connector-service reset-admin-password`: for a lost administrator password. Works on the database the same
 * settings as `serve` name (DATABASE__PATH, or DATABASE__URL), without the service: gives the administrator a new
 * generated password, printed this once, and ends its console sessions (users/service.ts `resetAdminPassword`).
 * A configuration error (exit 2) when AUTH__ADMIN_PASSWORD is set: every start applies that password again.
 */
export async function resetAdminPassword(env: Record<string, string | undefined>): Promise<number> {
  let reset: AdminPasswordReset | undefined;
  try {
    reset = await resetOnDatabase(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`connector-service reset-admin-password: ${e.message}\n`);
    return 2;
  }
  if (!reset) {
    process.stderr.write(
      "connector-service reset-admin-password: the database has no administrator yet: start the service, which creates one and prints its password\n",
    );
    return 1;
  }
  process.stdout.write(
    process.stdout.isTTY
      ? forPeople(reset)
      : `${JSON.stringify({ level: "info", msg: "administrator password reset", ...reset })}\n`,
  );
  return 0;
}

async function resetOnDatabase(env: Record<string, string | undefined>): Promise<AdminPasswordReset | undefined> {
  const config = loadConfig(env);
  if (config.auth.adminPassword !== undefined)
    throw new ConfigError(
      "AUTH__ADMIN_PASSWORD",
      "is set, and the service gives the administrator that password at every start: change the setting instead",
    );
  const { database } = config;
  if (database.url === undefined) {
    if (database.path === ":memory:") throw new ConfigError("DATABASE__PATH", "is :memory:, which holds no administrator");
    // Opening would create an empty database: a wrong path must not look like a database with no administrator.
    if (!existsSync(database.path))
      throw new ConfigError(
        "DATABASE__PATH",
        `names ${database.path}, which does not exist (the service's database is where it started)`,
      );
  }
  const store = await openStore({ ...database, checkpointThread: false });
  try {
    const users = createUserService({
      users: createUserRepository(store),
      clock: Date.now,
      newId: () => Bun.randomUUIDv7(),
      maxTokensPerUser: config.auth.maxTokensPerUser,
    });
    return await users.resetAdminPassword(config.auth.adminUsername);
  } finally {
    await store.close();
  }
}

function forPeople(reset: AdminPasswordReset): string {
  const lines = [
    `New password for the administrator "${reset.username}" (shown this once):`,
    "",
    `    ${reset.password}`,
    "",
    `Console sessions ended: ${reset.console_sessions_ended}. API tokens still work.`,
  ];
  if (reset.disabled) lines.push(`"${reset.username}" is disabled: another administrator must enable it before it can sign in.`);
  return `${lines.join("\n")}\n`;
}
