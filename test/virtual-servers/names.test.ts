import { describe, expect, test } from "bun:test";
import {
  admitNames,
  defaultPrefix,
  exposedName,
  MAX_EXPOSED_NAME_LENGTH,
  PREFIX_PATTERN,
  resolveName,
  rememberingAdmitter,
} from "../../src/virtual-servers/names";

const ID = "0196b1f2-7d40-7c11-8e5f-2a9b3c4d5e6f";
/** What clients commonly check a tool name against. */
const CLIENT_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

describe("defaultPrefix", () => {
  test.each([
    ["GitHub", "github"],
    ["Linear (Work)", "linear-work"],
    ["  --Stripe  API--  ", "stripe-api"],
    ["Ünïcödé Tools", "n-c-d-tools"],
    ["a".repeat(30), "a".repeat(24)],
    // Cut at 24 leaves a trailing "-": trimmed.
    [`${"b".repeat(23)} tail`, "b".repeat(23)],
  ])("%p → %p", (name, prefix) => {
    expect(defaultPrefix(name, ID)).toBe(prefix);
    expect(new RegExp(PREFIX_PATTERN).test(prefix)).toBe(true);
  });

  test("the id's first 8 characters when the name leaves nothing (or there is none)", () => {
    expect(defaultPrefix("!!!", ID)).toBe("0196b1f2");
    expect(defaultPrefix("日本語", ID)).toBe("0196b1f2");
    expect(defaultPrefix(null, ID)).toBe("0196b1f2");
    expect(defaultPrefix(undefined, ID)).toBe("0196b1f2");
  });
});

describe("exposedName", () => {
  test("prefix__name, or the name itself with the empty prefix", () => {
    expect(exposedName("github", "create_issue")).toBe("github__create_issue");
    expect(exposedName("", "create_issue")).toBe("create_issue");
  });

  test("a prefix never makes a client-valid name invalid", () => {
    const name = exposedName(defaultPrefix("My GitHub (prod)", ID), "create-issue_v2");
    expect(name).toBe("my-github-prod__create-issue_v2");
    expect(name).toMatch(CLIENT_NAME);
  });

  test("a pure function of (prefix, name): the same whatever other members exist", () => {
    const alone = admitNames("tool", [{ member: "a", prefix: "gh", names: ["x", "y"] }]);
    const withOthers = admitNames("tool", [
      { member: "a", prefix: "gh", names: ["x", "y"] },
      { member: "b", prefix: "lin", names: ["x", "z"] },
    ]);
    expect([...alone.routes.keys()]).toEqual(["gh__x", "gh__y"]);
    for (const name of alone.routes.keys()) expect(withOthers.routes.get(name)).toEqual(alone.routes.get(name)!);
  });
});

describe("admitNames", () => {
  test("routes each exposed name to its member and original name, in code-unit order", () => {
    const { routes, conflicts } = admitNames("tool", [
      { member: "m1", prefix: "zeta", names: ["b", "a"] },
      { member: "m2", prefix: "Alpha".toLowerCase(), names: ["Z"] },
    ]);
    expect([...routes]).toEqual([
      ["alpha__Z", { member: "m2", original: "Z" }],
      ["zeta__a", { member: "m1", original: "a" }],
      ["zeta__b", { member: "m1", original: "b" }],
    ]);
    expect(conflicts).toEqual([]);
  });

  test("a name two members produce is left out and reported with both, never routed", () => {
    const admission = admitNames("tool", [
      { member: "m1", prefix: "", names: ["echo", "add"] },
      { member: "m2", prefix: "other", names: ["echo"] },
      { member: "m3", prefix: "", names: ["echo"] },
    ]);
    expect(admission.conflicts).toEqual([{ kind: "tool", name: "echo", members: ["m1", "m3"] }]);
    expect(resolveName(admission, "echo")).toBeUndefined();
    expect(resolveName(admission, "add")).toEqual({ member: "m1", original: "add" });
    expect(resolveName(admission, "other__echo")).toEqual({ member: "m2", original: "echo" });
  });

  test("a name longer than 64 characters is left out and reported; 64 is admitted", () => {
    const fits = "t".repeat(MAX_EXPOSED_NAME_LENGTH - "gh__".length);
    const admission = admitNames("prompt", [{ member: "m1", prefix: "gh", names: [fits, `${fits}x`] }]);
    expect([...admission.routes.keys()]).toEqual([`gh__${fits}`]);
    expect(`gh__${fits}`).toMatch(CLIENT_NAME);
    expect(admission.conflicts).toEqual([{ kind: "prompt", name: `gh__${fits}x`, members: ["m1"] }]);
    expect(`gh__${fits}x`).toHaveLength(65);
  });

  test('prefix "" keeps the member\'s names as they are', () => {
    const admission = admitNames("tool", [{ member: "m1", prefix: "", names: ["get-env", "echo"] }]);
    expect([...admission.routes.keys()]).toEqual(["echo", "get-env"]);
  });

  test("a member listing a name twice offers it once (no conflict with itself)", () => {
    const admission = admitNames("tool", [{ member: "m1", prefix: "a", names: ["x", "x"] }]);
    expect(admission.conflicts).toEqual([]);
    expect(admission.routes.size).toBe(1);
  });

  test("resources and templates keep their URIs, whatever the prefix; a URI two members offer is reported", () => {
    const resources = admitNames("resource", [
      { member: "m1", prefix: "a", names: ["ui://widget/1", "file:///shared"] },
      { member: "m2", prefix: "b", names: ["file:///shared", `https://x.example/${"p".repeat(100)}`] },
    ]);
    expect([...resources.routes.keys()]).toEqual([`https://x.example/${"p".repeat(100)}`, "ui://widget/1"]);
    expect(resources.conflicts).toEqual([{ kind: "resource", name: "file:///shared", members: ["m1", "m2"] }]);
    const templates = admitNames("resource_template", [
      { member: "m1", prefix: "a", names: ["db://{table}"] },
      { member: "m2", prefix: "b", names: ["db://{table}"] },
    ]);
    expect(templates.routes.size).toBe(0);
    expect(templates.conflicts).toEqual([{ kind: "resource_template", name: "db://{table}", members: ["m1", "m2"] }]);
  });

  test("the resolver knows only admitted names: not prototype keys, not a member's own name behind a prefix", () => {
    const admission = admitNames("tool", [{ member: "m1", prefix: "gh", names: ["x"] }]);
    for (const name of ["x", "__proto__", "constructor", "gh__", "gh__y", ""])
      expect(resolveName(admission, name)).toBeUndefined();
  });
});

describe("PREFIX_PATTERN", () => {
  const pattern = new RegExp(PREFIX_PATTERN);
  test.each(["", "a", "github", "a-b-c", "0abc", "x".repeat(24)])("takes %p", (prefix) =>
    expect(pattern.test(prefix)).toBe(true),
  );
  test.each(["-a", "A", "a_b", "a__b", "x".repeat(25), "a b", "a:b", "ä"])("refuses %p", (prefix) =>
    expect(pattern.test(prefix)).toBe(false),
  );
});

describe("rememberingAdmitter (what lets a virtual server's sessions share one admission)", () => {
  const offers = [
    { member: "c1", prefix: "a", names: ["x", "y"] },
    { member: "c2", prefix: "b", names: ["x"] },
  ];
  test("the same offers again get the same names, routes and conflicts, in an admission of their own", () => {
    const admit = rememberingAdmitter(10);
    const first = admit("s1\ntools", "tool", offers);
    const again = admit(
      "s1\ntools",
      "tool",
      offers.map((o) => ({ ...o, names: [...o.names] })),
    );
    expect(again).not.toBe(first);
    expect(again.routes).toBe(first.routes);
    expect(again.names).toBe(first.names);
    expect(again).toEqual(admitNames("tool", offers));
  });
  test.each([
    ["another name", [offers[0]!, { ...offers[1]!, names: ["z"] }]],
    ["another member", [offers[0]!, { ...offers[1]!, member: "c3" }]],
    ["a name fewer", [{ ...offers[0]!, names: ["x"] }, offers[1]!]],
    ["another prefix", [offers[0]!, { ...offers[1]!, prefix: "a" }]],
    ["the members' order", [...offers].reverse()],
  ])("%s: admitted again", (_, changed) => {
    const admit = rememberingAdmitter(10);
    const first = admit("s1\ntools", "tool", offers);
    const next = admit("s1\ntools", "tool", changed);
    expect(next.routes).not.toBe(first.routes);
    expect(next).toEqual(admitNames("tool", changed));
  });
  test("each key remembers its own; past the bound all are forgotten", () => {
    const admit = rememberingAdmitter(2);
    const one = admit("s1\ntools", "tool", offers);
    const other = admit("s2\ntools", "tool", [offers[0]!]);
    expect(other.routes).not.toBe(one.routes);
    expect(admit("s1\ntools", "tool", offers).routes).toBe(one.routes);
    // A key it holds admitted anew (other offers) forgets none of the others.
    const changed = admit("s1\ntools", "tool", [offers[1]!]);
    expect(admit("s2\ntools", "tool", [offers[0]!]).routes).toBe(other.routes);
    expect(admit("s1\ntools", "tool", [offers[1]!]).routes).toBe(changed.routes);
    const renewed = admit("s1\ntools", "tool", offers);
    admit("s3\ntools", "tool", offers);
    expect(admit("s1\ntools", "tool", offers).routes).not.toBe(renewed.routes);
  });
});
