import { Conflict, NotFound, invalidField, invalidFields, type FieldError } from "../http-errors/errors";
import { readPage, type ListQuery } from "../http/pages";
import type { Principal } from "../users/model";
import type {
  CreateVirtualServerBody,
  MemberInput,
  MemberStatus,
  UpdateVirtualServerBody,
  VirtualServer,
  VirtualServerList,
} from "./model";
import type { ConflictNotes } from "./conflicts";
import type { MemberFailures } from "./member-failures";
import { defaultPrefix } from "./names";
import type { MemberRow, MemberWithState, VirtualServerRepository, VirtualServerRow, WriteRefused } from "./repository";

export type VirtualServerServiceDeps = {
  repository: VirtualServerRepository;
  clock: () => number;
  newId: () => string;
  publicUrl: () => string;
  /** VIRTUAL__MAX_PER_USER. */
  maxPerUser: number;
  /** What the MCP endpoint's last listings left out (conflicts.ts). */
  conflicts: ConflictNotes;
  /** Which members failed the endpoint's last listing (member-failures.ts). */
  failures: MemberFailures;
  /**
   * The members of a virtual server changed (`gone`: the connectors that left it): its MCP clients are told their
   * lists changed, and their upstream sessions with the members gone end (sessions.ts).
   */
  membersChanged: (serverId: string, gone: readonly string[]) => void;
  /** The virtual server was deleted: its MCP clients' sessions end, and their upstream sessions with them (sessions.ts). */
  deleted: (serverId: string) => void;
};

/** Where MCP clients reach a virtual server (the endpoint: docs/interface.md §9). */
export const mcpUrlOf = (publicUrl: string, id: string) => `${publicUrl}/api/v1/virtual-servers/${id}/mcp`;

/**
 * A member's status (docs/interface.md §9.1): ok when its connector is connected and it answered the endpoint's last
 * listing (`failed`: why it did not); otherwise unavailable, with the connector's own reason, or its state said in
 * words.
 */
export function memberStatus(
  member: Pick<MemberWithState, "state" | "disconnect_reason">,
  failed?: string,
): {
  status: MemberStatus;
  reason: string | null;
} {
  if (member.state === "connected") return failed ? { status: "unavailable", reason: failed } : { status: "ok", reason: null };
  const reason =
    member.disconnect_reason ??
    (member.state === "created"
      ? "The connector was never connected"
      : member.state === "auth_required"
        ? "The connector waits for its OAuth authorization"
        : "The connector is disconnected");
  return { status: "unavailable", reason };
}

const refusedMembers = () =>
  new Conflict("A member's connector was deleted while the virtual server was being written: try again");

/** Virtual servers: a user's chosen set of their connectors behind one MCP endpoint (docs/interface.md §9). */
export function createVirtualServerService(deps: VirtualServerServiceDeps) {
  const { repository: rows, clock } = deps;

  /** The caller's virtual server; another user's is indistinguishable from a missing one (docs/interface.md §3). */
  /** `found` when it is the caller's (an administrator's: anyone's); else as unknown as none. */
  function ownedOr404<T extends { owner_id: string }>(caller: Principal, id: string, found: T | undefined): T {
    if (!found || (found.owner_id !== caller.id && caller.role !== "admin")) throw new NotFound(`No virtual server ${id}`);
    return found;
  }
  const owned = async (caller: Principal, id: string): Promise<VirtualServerRow> =>
    ownedOr404(caller, id, await rows.findById(id));

  async function views(servers: VirtualServerRow[]): Promise<VirtualServer[]> {
    const all = await rows.membersOf(servers.map((s) => s.id));
    return servers.map((server) => ({
      id: server.id,
      name: server.name,
      description: server.description,
      members: all
        .filter((m) => m.virtual_server_id === server.id)
        .map((m) => ({
          connector_id: m.connector_id,
          prefix: m.prefix,
          state: m.state,
          ...memberStatus(m, deps.failures.of(server.id, m.connector_id)),
        })),
      failure_mode: server.failure_mode,
      tool_mode: server.tool_mode,
      // What the MCP endpoint's last listings left out (names.ts admitNames), as this process saw them.
      conflicts: deps.conflicts.of(server.id),
      owner_id: server.owner_id,
      created_at: new Date(server.created_at).toISOString(),
      updated_at: new Date(server.updated_at).toISOString(),
      mcp_url: mcpUrlOf(deps.publicUrl(), server.id),
    }));
  }
  const view = async (row: VirtualServerRow) => (await views([row]))[0]!;

  /**
   * The members as stored: each one of the owner's connectors, once, with its prefix — the one given, else the one it
   * had (`kept`), else the default from its connector's name. Every refusal names the member by index (422).
   */
  async function resolveMembers(
    ownerId: string,
    serverId: string,
    input: MemberInput[],
    kept: ReadonlyMap<string, string>,
  ): Promise<MemberRow[]> {
    const errors: FieldError[] = [];
    const refuse = (index: number, field: string, detail: string) =>
      errors.push({ field: `body.members[${index}].${field}`, detail });
    const connectors = new Map((await rows.connectors([...new Set(input.map((m) => m.connector_id))])).map((c) => [c.id, c]));
    const seen = new Map<string, number>();
    const prefixes = new Map<string, number>();
    const resolved: MemberRow[] = [];
    input.forEach((member, index) => {
      const id = member.connector_id;
      const connector = connectors.get(id);
      // Another user's connector and a missing one are refused alike: whether it exists is not the caller's to learn.
      if (!connector || connector.owner_id !== ownerId)
        return refuse(index, "connector_id", `${id} is not one of the owner's connectors`);
      const earlier = seen.get(id);
      if (earlier !== undefined) return refuse(index, "connector_id", `connector ${id} is already members[${earlier}]`);
      seen.set(id, index);
      const prefix = member.prefix ?? kept.get(id) ?? defaultPrefix(connector.name, id);
      // docs/interface.md §9.2: one member per prefix, "" included — two members with their names as they are would
      // make every shared name a conflict, and which member's names a client sees would hang on the other's.
      const other = prefixes.get(prefix);
      if (other !== undefined)
        return refuse(
          index,
          "prefix",
          `prefix "${prefix}" of members[${index}] (connector ${id}) is also that of members[${other}] (connector ${input[other]!.connector_id}): give one of them another prefix`,
        );
      prefixes.set(prefix, index);
      resolved.push({ virtual_server_id: serverId, connector_id: id, position: index, prefix });
    });
    if (errors.length > 0) throw invalidFields(errors);
    return resolved;
  }

  const refusal = (refused: WriteRefused) =>
    refused === "limit"
      ? new Conflict(
          `You have ${deps.maxPerUser} virtual servers, the most a user may have (VIRTUAL__MAX_PER_USER): delete one first`,
        )
      : refusedMembers();

  /**
   * Deletes a virtual server with what it leaves behind in this process: its noted conflicts and failed members, and
   * its MCP clients' sessions (with their upstream sessions). False when there was none.
   */
  async function deleteRow(id: string): Promise<boolean> {
    if (!(await rows.delete(id, clock()))) return false;
    deps.conflicts.forget(id);
    deps.failures.forget(id);
    deps.deleted(id);
    return true;
  }

  return {
    owned,
    /** The caller's virtual server and its members in their order (the MCP endpoint's view of it). */
    async withMembers(caller: Principal, id: string): Promise<{ row: VirtualServerRow; members: MemberWithState[] }> {
      const view = await rows.endpointView(id);
      return { row: ownedOr404(caller, id, view?.row), members: view!.members };
    },
    get: async (caller: Principal, id: string): Promise<VirtualServer> => view(await owned(caller, id)),

    list: (caller: Principal, query: ListQuery): Promise<VirtualServerList> =>
      readPage(query, (limit, after) => rows.page(caller.role === "admin" ? undefined : caller.id, limit, after), views),

    async create(caller: Principal, body: CreateVirtualServerBody): Promise<VirtualServer> {
      const id = deps.newId();
      const members = await resolveMembers(caller.id, id, body.members, new Map());
      const now = clock();
      const row: VirtualServerRow = {
        id,
        owner_id: caller.id,
        name: body.name,
        description: body.description ?? null,
        failure_mode: body.failure_mode ?? "open",
        tool_mode: body.tool_mode ?? "all",
        created_at: now,
        updated_at: now,
      };
      const refused = await rows.insert(row, members, deps.maxPerUser);
      if (refused) throw refusal(refused);
      return view(row);
    },

    /** PATCH: the fields given replace the stored ones; `members` replaces the list (a member kept keeps its prefix). */
    async update(caller: Principal, id: string, body: UpdateVirtualServerBody): Promise<VirtualServer> {
      if (Object.values(body).every((v) => v === undefined))
        throw invalidField("body", "must change name, description, members, failure_mode or tool_mode");
      const row = await owned(caller, id);
      let members: MemberRow[] | undefined;
      let before = new Map<string, string>();
      if (body.members !== undefined) {
        before = new Map((await rows.membersOf([id])).map((m) => [m.connector_id, m.prefix]));
        members = await resolveMembers(row.owner_id, id, body.members, before);
      }
      const written = await rows.update(
        id,
        {
          ...(body.name !== undefined && { name: body.name }),
          ...(body.description !== undefined && { description: body.description }),
          ...(body.failure_mode !== undefined && { failure_mode: body.failure_mode }),
          ...(body.tool_mode !== undefined && { tool_mode: body.tool_mode }),
        },
        members,
        clock(),
      );
      if (written === undefined) throw new NotFound(`No virtual server ${id}`);
      if (typeof written === "string") throw refusal(written);
      // Other members, other names: the next listing tells.
      if (members) {
        deps.conflicts.forget(id);
        deps.failures.forget(id);
        const now = new Set(members.map((m) => m.connector_id));
        deps.membersChanged(
          id,
          [...before.keys()].filter((connectorId) => !now.has(connectorId)),
        );
      }
      return view(written);
    },

    async delete(caller: Principal, id: string): Promise<void> {
      await owned(caller, id);
      if (!(await deleteRow(id))) throw new NotFound(`No virtual server ${id}`);
    },

    /** A connector about to be deleted leaves every virtual server, each with its event (docs/interface.md §9.1). */
    async removeConnector(connectorId: string): Promise<void> {
      for (const id of await rows.removeConnector(connectorId, clock())) deps.membersChanged(id, [connectorId]);
    },

    /** A deleted user's virtual servers go one by one, each with its event (the users row's cascade would say nothing). */
    async deleteAllOf(ownerId: string): Promise<void> {
      for (let page = await rows.page(ownerId, 50, undefined); page.length > 0; page = await rows.page(ownerId, 50, undefined))
        for (const row of page) await deleteRow(row.id);
    },
  };
}
export type VirtualServerService = ReturnType<typeof createVirtualServerService>;
