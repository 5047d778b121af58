import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import ts from "typescript";

/**
 * Comments a reader can follow: what the code cites — a section of docs/interface.md, a file of the repository —
 * is in the repository, under that name. (Cited RFCs and specifications are links to their own pages.)
 */
const ROOT = resolve(import.meta.dir, "../..");
const scan = (pattern: string) => [...new Glob(pattern).scanSync(ROOT)].sort();
const code = [...scan("src/**/*.ts"), ...scan("test/**/*.ts"), ...scan("bench/**/*.ts")];
const prose = ["README.md", "SECURITY.md", ...scan("docs/**/*.md")];

/** Every comment of a TypeScript file, with its line: what the parser sees as comments, not what looks like one. */
function commentsOf(file: string, text: string): { line: number; text: string }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const seen = new Map<number, string>();
  const visit = (node: ts.Node) => {
    for (const range of [
      ...(ts.getLeadingCommentRanges(text, node.pos) ?? []),
      ...(ts.getTrailingCommentRanges(text, node.end) ?? []),
    ])
      seen.set(range.pos, text.slice(range.pos, range.end));
    ts.forEachChild(node, visit);
  };
  visit(source);
  visit(source.endOfFileToken);
  return [...seen].map(([pos, comment]) => ({ line: source.getLineAndCharacterOfPosition(pos).line + 1, text: comment }));
}

const comments = code.flatMap((file) => commentsOf(file, readFileSync(join(ROOT, file), "utf8")).map((c) => ({ file, ...c })));
const texts = [
  ...comments.map(({ file, line, text }) => ({ where: `${file}:${line}`, file, text })),
  ...prose.map((file) => ({ where: file, file, text: readFileSync(join(ROOT, file), "utf8") })),
];

/** The folder names a path into the repository may start with: its top level's, and every folder's under src/ and test/. */
const subfolders = (dir: string, deep: boolean): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !["node_modules", "dist", ".git"].includes(entry.name))
    .flatMap((entry) => [entry.name, ...(deep ? subfolders(join(dir, entry.name), true) : [])]);
const folders = new Set([...subfolders(".", false), ...subfolders("src", true), ...subfolders("test", true)]);

/**
 * Files that still point outside, being rewritten on another branch when this test was written (the MCP proxy's):
 * their comments are to cite docs/interface.md §6. The test fails while this names a file that no longer does.
 */
/** The sections of docs/interface.md by number: `## 4. Connectors` is 4, `### 4.3 States` is 4.3. */
const sections = new Set(
  [...readFileSync(join(ROOT, "docs/interface.md"), "utf8").matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((m) => m[1]!),
);

describe("pointers in comments and docs", () => {
  test("were read (the test sees what it checks)", () => {
    expect(comments.length).toBeGreaterThan(1000);
    expect(sections.has("4.3")).toBe(true);
  });

  test("every citation of docs/interface.md names one of its sections", () => {
    const broken: string[] = [];
    for (const { where, text } of texts)
      for (const citation of text.matchAll(/docs\/interface\.md((?:,? (?:and )?§\d+(?:\.\d+)?)+)/g))
        for (const [, section] of citation[1]!.matchAll(/§(\d+(?:\.\d+)?)/g))
          if (!sections.has(section!)) broken.push(`${where}: §${section}`);
    expect(broken).toEqual([]);
  });

  test("nothing points outside the repository: no design notes or spec parts a newcomer does not have", () => {
    const outside = texts
      .filter(({ text }) => /\.\.\/shared\/|\bshared\/spec\/|DESIGN\.md|\bspec (?:part )?\d/i.test(text))
      .map(({ file }) => file);
    expect([...new Set(outside)]).toEqual([]);
  });

  test("every file a comment names is in the repository (under src/, the repository root, or beside the comment)", () => {
    const missing: string[] = [];
    for (const { file, line, text } of comments)
      for (const [path] of text.matchAll(/(?<![\w.:/@<-])(?:\.\.?\/)*(?:[\w-]+\/)+[\w.-]+\.(?:ts|js|md|json|html|css|sql)\b/g)) {
        // A path into this repository starts at one of its folders (src/, test/, a feature folder) or at ./ or ../;
        // anything else names a file of another project (a package's dist/index.js).
        if (!/^\.\.?\//.test(path) && !folders.has(path.slice(0, path.indexOf("/")))) continue;
        const candidates = [join(ROOT, path), join(ROOT, "src", path), join(ROOT, dirname(file), path)];
        if (!candidates.some((candidate) => existsSync(candidate))) missing.push(`${file}:${line}: ${path}`);
      }
    expect(missing).toEqual([]);
  });
});
