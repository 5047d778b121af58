import { t } from "elysia";
import type { ProblemDocument } from "./problem";

/**
 * The problem document as OpenAPI shows it (every route's 4xx/5xx responses); problem.ts writes it. Its type is
 * checked against problem.ts's own below, so the two cannot drift.
 */
export const Problem = t.Object(
  {
    type: t.String({ description: "URI reference identifying the problem type" }),
    title: t.String(),
    status: t.Integer(),
    detail: t.String({ description: "What is wrong, for a person to read" }),
    instance: t.Optional(t.String()),
    errors: t.Optional(t.Array(t.Object({ field: t.String(), detail: t.String() }))),
  },
  { title: "Problem" },
);
export type Problem = typeof Problem.static;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
export const PROBLEM_SCHEMA_MATCHES: Same<Problem, ProblemDocument> = true;
