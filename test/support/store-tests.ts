/**
 * The test files whose outcome can depend on the store, one path per line: the suite's second run (TEST_STORE=postgres,
 * `npm run test:postgres`) runs only these: those that open the test store (storeTests), less the files below, which
 * choose their store whatever TEST_STORE says, so a second run would repeat the first. Every other file runs once, in
 * the first run.
 *
 *   bun test/support/store-tests.ts            # the list
 *   bun test $(bun test/support/store-tests.ts)
 */
import { Glob } from "bun";
import { join, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dir, "../..");

/** Files that pick their own store: the same run twice over. Each says why; the test of this list checks they exist. */
export const OWN_STORE: Record<string, string> = {
  "test/replicas/replicas.test.ts": "replicas always share a throwaway PostgreSQL (test/support/replicas.ts)",
  "test/runtime/local.test.ts": "the local runtime's processes are one replica's: a SQLite file",
  "test/runtime/modern-managed.test.ts": "managed stdio on the local runtime: SQLite in memory",
  "test/db/postgres.test.ts": "PostgreSQL by design, in either run",
};

/** Each exported function (or arrow const) of a file, with its text. */
function exportedFunctions(file: string, text: string): [string, string][] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: [string, string][] = [];
  const exported = (node: ts.Node) =>
    ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  for (const node of source.statements) {
    if (!exported(node)) continue;
    if (ts.isFunctionDeclaration(node) && node.name) out.push([node.name.text, node.getText(source)]);
    if (ts.isVariableStatement(node))
      for (const d of node.declarationList.declarations)
        if (ts.isIdentifier(d.name) && d.initializer) out.push([d.name.text, d.initializer.getText(source)]);
  }
  return out;
}

const mentions = (text: string, names: Set<string>) => [...names].some((name) => new RegExp(`\\b${name}\\b`).test(text));

/**
 * A test file depends on the store when it calls something that opens the test store: `TEST_STORE` itself, or a
 * helper of test/support or test/peers that does (found to a fixpoint: a helper calling such a helper does too).
 */
export async function storeTests(): Promise<string[]> {
  const read = async (pattern: string) =>
    Promise.all(
      [...new Glob(pattern).scanSync(ROOT)].sort().map(async (f) => [f, await Bun.file(join(ROOT, f)).text()] as const),
    );
  const helpers = [...(await read("test/support/*.ts")), ...(await read("test/peers/*.ts"))].flatMap(([file, text]) =>
    exportedFunctions(file, text),
  );
  const openers = new Set(["TEST_STORE"]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [name, body] of helpers)
      if (!openers.has(name) && mentions(body, openers)) {
        openers.add(name);
        grew = true;
      }
  }
  return (await read("test/**/*.test.ts"))
    .filter(([file, text]) => !(file in OWN_STORE) && mentions(text, openers))
    .map(([file]) => file);
}

if (import.meta.main) for (const file of await storeTests()) console.log(`./${file}`);
