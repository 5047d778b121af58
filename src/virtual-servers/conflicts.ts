import type { ListKind } from "./list-cursor";
import type { NameConflict } from "./names";

const ORDER: ListKind[] = ["tools", "prompts", "resources", "resource_templates"];

/**
 * The conflicts (names.ts) each virtual server's endpoint saw at its last listing of each kind, for the resource's
 * `conflicts` (docs/interface.md §9.1). In this process's memory: empty until a client lists, on another replica, and
 * after a restart; forgotten when the members change or the virtual server goes.
 */
export function createConflictNotes() {
  const notes = new Map<string, Map<ListKind, NameConflict[]>>();
  return {
    note(serverId: string, list: ListKind, conflicts: NameConflict[]): void {
      let lists = notes.get(serverId);
      if (!lists) notes.set(serverId, (lists = new Map()));
      lists.set(list, conflicts);
    },
    /** Tools first, then prompts, resources and templates; each kind in name order. */
    of(serverId: string): NameConflict[] {
      const lists = notes.get(serverId);
      return lists ? ORDER.flatMap((list) => lists.get(list) ?? []) : [];
    },
    forget: (serverId: string): void => void notes.delete(serverId),
  };
}
export type ConflictNotes = ReturnType<typeof createConflictNotes>;
