/**
 * Which members failed the endpoint's last listing of each virtual server, and why (issue 24 item 6: a member's
 * status and reason show on the resource). In this process's memory, like conflicts.ts: a member that answers a
 * later listing is cleared; nothing is known on another replica or after a restart.
 */
export function createMemberFailures() {
  const failures = new Map<string, Map<string, string>>();
  return {
    /** One listing's outcome: `failed` (connector id → why) failed it, `answered` answered it. */
    note(serverId: string, failed: ReadonlyMap<string, string>, answered: readonly string[]): void {
      let members = failures.get(serverId);
      if (!members) failures.set(serverId, (members = new Map()));
      for (const id of answered) members.delete(id);
      for (const [id, why] of failed) members.set(id, why);
    },
    /** Why the member failed the last listing it was in; undefined when it answered (or none was made here). */
    of: (serverId: string, connectorId: string): string | undefined => failures.get(serverId)?.get(connectorId),
    forget: (serverId: string): void => void failures.delete(serverId),
  };
}
export type MemberFailures = ReturnType<typeof createMemberFailures>;
