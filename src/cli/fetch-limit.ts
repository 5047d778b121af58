/**
 * Bun's fetch client runs at most 256 requests at once per process, and reads the limit only when the process starts
 * (`BUN_CONFIG_MAX_HTTP_REQUESTS`). Every relayed event stream holds one of them for as long as it is open, so 256
 * idle MCP clients would stall every other proxied request. `serve` therefore replaces its own process image (same
 * pid, same arguments, `execve`) with one that has the limit raised, unless the environment already sets it.
 */
export const FETCH_LIMIT = 8192;
const SETTING = "BUN_CONFIG_MAX_HTTP_REQUESTS";

export function ensureFetchLimit(env: Record<string, string | undefined> = process.env): void {
  if (env[SETTING]) return;
  // A compiled binary's argv is ["bun", "/$bunfs/root/<name>", ...args]; `bun src/index.ts …` has the script at [1].
  const compiled = process.argv[1]?.startsWith("/$bunfs/");
  const args = process.argv.slice(compiled ? 2 : 1);
  process.execve!(process.execPath, [process.execPath, ...args], { ...env, [SETTING]: String(FETCH_LIMIT) });
}
