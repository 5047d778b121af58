import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

/**
 * The layers of src/, bottom first (docs/development.md "Layout"). A folder (or top-level file) may import only from the folders
 * of lower layers — never sideways, never up — so a rule can be changed where it lives without a cycle pulling
 * in the rest. Type-only imports count: they are dependencies too.
 */
const LAYERS: string[][] = [
  ["version", "executable", "observability", "cache", "secrets", "urls", "metrics", "db"],
  ["http-errors"],
  ["http", "docs", "console"],
  ["security", "gateway", "health", "scheduler", "demo", "rate-limits"],
  // Above the gateways: the handshake asks server/discover as a 2026-07-28 client would (gateway/era.ts).
  ["upstream", "users", "forward"],
  ["presets"],
  ["connectors", "runtime", "config"],
  // Below the authorization server, which issues tokens for a virtual server's MCP URL as for a connector's.
  ["virtual-servers", "era-bridge"],
  ["oauth-client", "deployments", "a2a", "oauth-server", "events", "audit"],
  ["connector-api", "proxy"],
  ["app"],
  ["cli"],
  ["index"],
];

const SRC = resolve(import.meta.dir, "../../src");
const files = [...new Glob("**/*.ts").scanSync(SRC)].filter((f) => !f.endsWith(".d.ts")).sort();

const sources: Record<string, string> = {};
for (const file of files) sources[file] = await Bun.file(join(SRC, file)).text();

/** Every relative import of every file (static, type-only, re-export and dynamic), as paths under src/. */
const imports = new Map<string, string[]>();
for (const file of files) {
  const { importedFiles } = ts.preProcessFile(sources[file]!, true, true);
  const local = importedFiles
    .map((i) => i.fileName)
    .filter((name) => name.startsWith("."))
    .map((name) => relative(SRC, resolve(SRC, dirname(file), name)))
    .filter((path) => !path.startsWith(".."))
    .map((path) => (path.endsWith(".ts") ? path : `${path}.ts`));
  imports.set(file, local);
}

const layerOf = (file: string) => {
  const unit = file.includes("/") ? file.slice(0, file.indexOf("/")) : file.replace(/\.ts$/, "");
  return { unit, rank: LAYERS.findIndex((layer) => layer.includes(unit)) };
};

describe("the import graph of src/", () => {
  test("was read (the test sees the files it checks)", () => {
    expect(files.length).toBeGreaterThan(50);
    expect(imports.get("app.ts")!.length).toBeGreaterThan(20);
  });

  test("has no cycle between files", () => {
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const path: string[] = [];
    const visit = (file: string) => {
      state.set(file, "open");
      path.push(file);
      for (const next of imports.get(file) ?? []) {
        if (state.get(next) === "open") cycles.push([...path.slice(path.indexOf(next)), next].join(" → "));
        else if (!state.has(next)) visit(next);
      }
      path.pop();
      state.set(file, "done");
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  test("imports only downward, from a lower layer", () => {
    const wrong: string[] = [];
    for (const [file, targets] of imports) {
      const from = layerOf(file);
      if (from.rank < 0) wrong.push(`${file}: ${from.unit} is in no layer (add it to LAYERS and docs/development.md "Layout")`);
      for (const target of targets) {
        const to = layerOf(target);
        if (to.unit !== from.unit && !(to.rank >= 0 && to.rank < from.rank)) wrong.push(`${file} imports ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test("the composition root is imported by the CLI alone", () => {
    const importers = [...imports].filter(([, targets]) => targets.includes("app.ts")).map(([file]) => file);
    expect(importers).toEqual(["cli/serve.ts"]);
  });
});

describe("one place per rule", () => {
  const using = (pattern: RegExp) => files.filter((file) => pattern.test(sources[file]!));

  test("a connector's state and credentials are written by connectors/transitions.ts alone", () => {
    expect(using(/\.writeConnection\(/)).toEqual(["connectors/transitions.ts"]);
    // The repository's UPDATEs of the connectors table: writeConnection's and updateSettings' (metadata, tool policy,
    // rate limits and pins: no state, no credential). Key rotation re-seals (never changes) every table's sealed columns in
    // cli/rotate-key.ts, and copy writes whole rows, both through cli/tables.ts.
    expect(sources["connectors/repository.ts"]!.match(/\.update\(connectors\)/g)).toHaveLength(2);
    expect(sources["connectors/repository.ts"]!).toMatch(
      /\.update\(connectors\)\s*\.set\(\{ \.\.\.settings, updated_at: at \}\)/,
    );
    expect(sources["connectors/repository.ts"]!).toMatch(
      /ConnectorSettings = Partial<\s*Pick<ConnectorRow, "metadata" \| "tool_policy" \| "tools_pinned_at" \| "tool_changes" \| "rate_limits">\s*>;/,
    );
    expect(using(/\.update\(connectors\)/)).toEqual(["connectors/repository.ts"]);
  });

  test("problem documents are rendered by http-errors/problem.ts alone, which knows no framework", () => {
    expect(using(/application\/problem\+json/)).toEqual(["http-errors/problem.ts"]);
    expect(using(/JSON\.stringify\(toProblem/)).toEqual(["http-errors/problem.ts"]);
    // Nothing the renderer imports, directly or not, imports Elysia: Bun's native routes use it too.
    const reached = new Set<string>();
    const walk = (file: string) => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const next of imports.get(file) ?? []) walk(next);
    };
    walk("http-errors/problem.ts");
    expect([...reached].filter((file) => /from "elysia"/.test(sources[file]!))).toEqual([]);
  });

  test("repositories speak only what both stores speak, and only they and db/ touch a dialect", () => {
    const repositories = files.filter((file) => file.endsWith("/repository.ts"));
    expect(repositories.length).toBeGreaterThanOrEqual(4);
    // SQLite's synchronous executors do not exist on PostgreSQL: a query is awaited (or yielded in a transaction).
    for (const file of repositories)
      expect({ file, sqliteOnly: sources[file]!.match(/\.(get|all|run)\(/g) ?? [] }).toEqual({ file, sqliteOnly: [] });
    // Drivers and dialect packages: db/ opens them, tables define them.
    const dialects = using(/from "(bun:sqlite|drizzle-orm\/(bun-sqlite|bun-sql|sqlite-core|pg-core))"/);
    expect(dialects.filter((file) => !file.startsWith("db/") && !file.endsWith("/table.ts"))).toEqual([]);
  });
});
