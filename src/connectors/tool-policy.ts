import { invalidField } from "../http-errors/errors";
import type { ToolPolicy } from "./model";

/**
 * A tool policy compiled for the proxy: which of the server's tools a client sees, under which name, with which
 * description. Names in the policy are the server's; `rename` gives the name clients see and call.
 */
export type CompiledToolPolicy = {
  /** Whether the server's tool `name` is shown and callable. */
  visible(name: string): boolean;
  /** The name clients see for the server's tool `name`. */
  exposed(name: string): string;
  /** The server's name of the tool a client calls `name`, or undefined when no visible tool goes by it. */
  original(name: string): string | undefined;
  /** The description clients see, when the policy overrides the server's. */
  description(name: string): string | undefined;
};

export function compileToolPolicy(policy: ToolPolicy): CompiledToolPolicy {
  const allow = policy.allow && new Set(policy.allow);
  const deny = new Set(policy.deny ?? []);
  const rename = policy.rename ?? {};
  const renamedFrom = new Map(Object.entries(rename).map(([server, exposed]) => [exposed, server]));
  const visible = (name: string) => !deny.has(name) && (allow === undefined || allow.has(name));
  return {
    visible,
    exposed: (name) => rename[name] ?? name,
    original(name) {
      const server = renamedFrom.get(name) ?? (Object.hasOwn(rename, name) ? undefined : name);
      return server !== undefined && visible(server) ? server : undefined;
    },
    description: (name) =>
      policy.descriptions && Object.hasOwn(policy.descriptions, name) ? policy.descriptions[name] : undefined,
  };
}

/** What the schema cannot say: one list at a time, and no two tools a client could not tell apart. */
export function checkToolPolicy(policy: ToolPolicy): void {
  if (policy.allow && policy.deny) throw invalidField("body.tool_policy", "has both allow and deny: give one list");
  const exposed = new Map<string, string>();
  for (const [server, name] of Object.entries(policy.rename ?? {})) {
    const other = exposed.get(name);
    if (other !== undefined)
      throw invalidField(
        `body.tool_policy.rename.${server}`,
        `gives ${JSON.stringify(other)} and ${JSON.stringify(server)} the same name ${JSON.stringify(name)}`,
      );
    exposed.set(name, server);
  }
  // A new name that is another tool's own (unrenamed) name would make calls ambiguous.
  for (const [name, server] of exposed) {
    if (name !== server && !Object.hasOwn(policy.rename ?? {}, name) && (policy.allow?.includes(name) ?? false)) {
      throw invalidField(
        `body.tool_policy.rename.${server}`,
        `renames ${JSON.stringify(server)} to ${JSON.stringify(name)}, which another allowed tool is called`,
      );
    }
  }
}
