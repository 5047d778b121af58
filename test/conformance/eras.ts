/**
 * The conformance kit's server scenarios per MCP era, against server-everything four ways: directly (its own
 * Streamable HTTP, which speaks only the 2025 session era), through a connector's proxy URL, through a virtual server
 * whose one member is that connector (`prefix: ""`), and as a managed stdio connector (`mcp+stdio://`, local runtime).
 * Prints the README's table (docs/conformance.md) as Markdown: for each scenario and target, the checks that passed
 * of those that ran, per era.
 *
 *   bun test/conformance/eras.ts [--eras 2025-11-25,2026-07-28] [--out DIR]
 *
 * Runs the kit's 0.2.0-alpha (`conformance-next`, the one with `--spec-version 2026-07-28`) under Bun (it needs
 * Node ≥ 22's `fs.globSync`). Every server binds 127.0.0.1; all are stopped at the end. Takes a few minutes.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { EVERYTHING, startEverything } from "../peers/everything";
import { connectedConnector, proxyUrl } from "../support/mcp";
import { ADMIN, startTestService } from "../support/service";

const KIT = resolve(import.meta.dir, "../../node_modules/conformance-next/dist/index.js");
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ""), process.argv[i + 1]!);
const ERAS = (args.get("eras") ?? "2025-11-25,2026-07-28").split(",");
const out = args.get("out") ?? mkdtempSync(join(tmpdir(), "cs-conformance-eras-"));

type Check = { status: string };
/** scenario → passed / ran, for one run of the kit. */
type Run = Map<string, { passed: number; ran: number }>;

/** One run of the kit's active server suite for `era` against `url`; each scenario's checks.json read. */
async function kit(url: string, era: string, dir: string): Promise<Run> {
  const proc = Bun.spawn([process.execPath, KIT, "server", "--url", url, "--spec-version", era, "-o", dir], {
    stdout: "pipe",
    stderr: "pipe",
  });
  await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const run: Run = new Map();
  for (const entry of readdirSync(dir)) {
    const scenario = entry.replace(/^server-(?!initialize|session|stateless|sse)/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
    const checks = JSON.parse(readFileSync(join(dir, entry, "checks.json"), "utf8")) as Check[];
    const counted = checks.filter((c) => c.status === "SUCCESS" || c.status === "FAILURE");
    run.set(scenario, { passed: counted.filter((c) => c.status === "SUCCESS").length, ran: counted.length });
  }
  return run;
}

const PRESETS = JSON.stringify([
  {
    url: "mcp+stdio://everything",
    metadata: { name: "Everything" },
    stdio: { image: "example/server-everything:latest", command: ["node", EVERYTHING], args: ["stdio"] },
  },
]);

const everything = await startEverything();
// The kit opens a session per scenario and ends few: each is a server process of the managed connector, so the caps
// on them are raised for this run.
const service = await startTestService({
  CONNECTOR__PRESETS: PRESETS,
  DATABASE__PATH: ":memory:",
  LOG__LEVEL: "warn",
  RUNTIME__MAX_PROCESSES_PER_USER: "200",
  RUNTIME__MAX_PROCESSES: "200",
});
try {
  const remote = await connectedConnector(service.api, everything.url);
  const managed = (await service.api("POST", "/api/v1/connectors", { body: { url: "mcp+stdio://everything" } })).body.id;
  await service.api("POST", `/api/v1/connectors/${managed}/connect`, { body: {} });
  const virtual = await service.api("POST", "/api/v1/virtual-servers", {
    body: { name: "Conformance", members: [{ connector_id: remote, prefix: "" }] },
  });
  // The kit runs under Bun, whose fetch sends URL credentials as HTTP Basic: the service's own authentication.
  const withBasic = (url: string) => url.replace("http://", `http://${ADMIN.username}:${ADMIN.password}@`);
  const targets: [string, string][] = [
    ["direct", everything.url],
    ["proxy", withBasic(proxyUrl(service, remote))],
    ["virtual server", withBasic(virtual.body.mcp_url.replace(/^https?:\/\/[^/]+/, service.url))],
    ["managed stdio", withBasic(proxyUrl(service, managed))],
  ];
  const results = new Map<string, Run>();
  for (const era of ERAS)
    for (const [name, url] of targets) {
      process.stderr.write(`${era} ${name}…\n`);
      results.set(`${era} ${name}`, await kit(url, era, join(out, era, name.replace(/\s+/g, "-"))));
    }
  for (const era of ERAS) {
    const runs = targets.map(([name]) => results.get(`${era} ${name}`)!);
    const scenarios = [...new Set(runs.flatMap((run) => [...run.keys()]))].sort();
    console.log(`\n**${era}** — checks passed / run, per scenario\n`);
    console.log(`| scenario | ${targets.map(([name]) => name).join(" | ")} |`);
    console.log(`|---|${targets.map(() => "---").join("|")}|`);
    for (const scenario of scenarios) {
      const cells = runs.map((run) => {
        const r = run.get(scenario);
        return !r ? "—" : r.ran === 0 ? "info" : `${r.passed === r.ran ? "✅" : "❌"} ${r.passed}/${r.ran}`;
      });
      console.log(`| ${scenario} | ${cells.join(" | ")} |`);
    }
    const totals = runs.map((run) => {
      const all = [...run.values()];
      return `${all.reduce((n, r) => n + r.passed, 0)}/${all.reduce((n, r) => n + r.ran, 0)}`;
    });
    console.log(`| **all checks** | ${totals.join(" | ")} |`);
  }
} finally {
  await service.stop();
  await everything.stop();
  if (!args.has("out")) rmSync(out, { recursive: true, force: true });
}
