import { ConfigError, loadConfig } from "../config/load";
import { openStore } from "../db/open";

export async function migrate(env: Record<string, string | undefined>): Promise<number> {
  try {
    const config = loadConfig(env);
    const store = await openStore(config.database);
    process.stdout.write(
      `${JSON.stringify({ level: "info", msg: "migrated", store: store.dialect, path: config.database.path, migrations_applied: store.applied })}\n`,
    );
    await store.close();
    return 0;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`connector-service: configuration error: ${e.message}\n`);
    return 2;
  }
}
