import { ConfigError, loadConfig } from "../config/load";
import { openDatabase } from "../db/open";

export function migrate(env: Record<string, string | undefined>): number {
  try {
    const config = loadConfig(env);
    const database = openDatabase(config.database.path);
    process.stdout.write(`${JSON.stringify({ level: "info", msg: "migrated", path: config.database.path, migrations_applied: database.applied })}\n`);
    database.close();
    return 0;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`connector-service: configuration error: ${e.message}\n`);
    return 2;
  }
}
