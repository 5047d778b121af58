/**
 * modern.ts (which loads the MCP SDK's v2 package, some 70 ms under Bun: era.ts) imported on the first request that may
 * be 2026-07-28, then the same module: a dynamic import on every request cost 5 % of the era bridge's CPU.
 */
let modern: Promise<typeof import("./modern")> | undefined;
export const loadModern = () => (modern ??= import("./modern"));
