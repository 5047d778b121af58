import { expect, test } from "bun:test";
import { listMember, mergeLists } from "../../src/virtual-servers/merge";
import type { MemberSession } from "../../src/virtual-servers/member-session";

// A member's list as the merge reads it (src/virtual-servers/merge.ts): what is not an item is left out, the first of
// a name is the one, pages are followed — whether or not its answer is the same array as last time (answer-reuse.ts).

const member = { connectorId: "c1", prefix: "one" };

/** A member session that answers its pages (by cursor) as given: only what listMember asks of one. */
const answering = (pages: Record<string, unknown>) =>
  ({
    capabilities: async () => ({ tools: {} }),
    request: async (_method: string, params: { cursor?: string } | undefined) => pages[params?.cursor ?? ""] as never,
  }) as unknown as MemberSession;

test("what is not an object in a member's list is left out, and the first item of a name is the one listed", async () => {
  const tools = [null, 5, "x", { name: "a", title: "first" }, { name: "a", title: "second" }, { title: "no name" }];
  const listed = await listMember(answering({ "": { tools } }), member, "tools", 1000);
  const merged = mergeLists("tools", [listed]);
  expect(merged.admission.names).toEqual(["one__a"]);
  expect(merged.item("one__a")).toEqual({ name: "one__a", title: "first" });
});

test("a member's pages are followed and listed together", async () => {
  const pages = { "": { tools: [{ name: "a" }], nextCursor: "2" }, "2": { tools: [{ name: "b" }, 7] } };
  const merged = mergeLists("tools", [await listMember(answering(pages), member, "tools", 1000)]);
  expect(merged.admission.names).toEqual(["one__a", "one__b"]);
});

test("the same answer read again, then a changed one: each listing shows what the member answered", async () => {
  const tools = [{ name: "a" }, { name: "b" }];
  const result = { tools };
  const first = mergeLists("tools", [await listMember(answering({ "": result }), member, "tools", 1000)]);
  const again = mergeLists("tools", [await listMember(answering({ "": result }), member, "tools", 1000)]);
  expect(again.admission.names).toEqual(first.admission.names);
  const changed = mergeLists("tools", [
    await listMember(answering({ "": { tools: [{ name: "a", title: "new" }, { name: "c" }] } }), member, "tools", 1000),
  ]);
  expect(changed.admission.names).toEqual(["one__a", "one__c"]);
  expect(changed.item("one__a")).toEqual({ name: "one__a", title: "new" });
});
