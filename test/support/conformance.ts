import { expect } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const CONFORMANCE = resolve(import.meta.dir, "../../node_modules/@modelcontextprotocol/conformance/dist/index.js");

/**
 * The server suite of @modelcontextprotocol/conformance 0.1.16 ("active"). Many scenarios expect the
 * kit's own test server and fail against server-everything; what matters is that every check ends the
 * same through the proxy as directly. Listed so that a scenario disappearing or appearing is visible.
 */
export const SCENARIOS = [
  "server-initialize",
  "logging-set-level",
  "ping",
  "completion-complete",
  "tools-list",
  "tools-call-simple-text",
  "tools-call-image",
  "tools-call-audio",
  "tools-call-embedded-resource",
  "tools-call-mixed-content",
  "tools-call-with-logging",
  "tools-call-error",
  "tools-call-with-progress",
  "tools-call-sampling",
  "tools-call-elicitation",
  "elicitation-sep1034-defaults",
  "server-sse-multiple-streams",
  "elicitation-sep1330-enums",
  "resources-list",
  "resources-read-text",
  "resources-read-binary",
  "resources-templates-read",
  "resources-subscribe",
  "resources-unsubscribe",
  "prompts-list",
  "prompts-get-simple",
  "prompts-get-with-args",
  "prompts-get-embedded-resource",
  "prompts-get-with-image",
  "dns-rebinding-protection",
];

export type Check = { id: string; status: string };

/** Runs the kit (it needs Node ≥ 22, so under Bun) and reads each scenario's checks.json. */
export async function runSuite(url: string, dir: string): Promise<Map<string, Check[]>> {
  const proc = Bun.spawn([process.execPath, CONFORMANCE, "server", "--url", url, "-o", dir], { stdout: "pipe", stderr: "pipe" });
  const [stdout] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  expect(stdout).toContain("SUMMARY");
  const results = new Map<string, Check[]>();
  for (const entry of readdirSync(dir)) {
    const scenario = entry.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
    const checks = JSON.parse(readFileSync(join(dir, entry, "checks.json"), "utf8")) as Check[];
    results.set(
      scenario,
      checks.map((c) => ({ id: c.id, status: c.status })),
    );
  }
  return results;
}
