import { t } from "elysia";

/** [RFC 9457 §3](https://www.rfc-editor.org/rfc/rfc9457#section-3) problem details, plus `errors` naming the offending fields of a 4xx. */
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

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Problem types are relative URIs under the service ([RFC 9457 §3.1.1](https://www.rfc-editor.org/rfc/rfc9457#section-3.1.1) allows relative references). */
export const problemType = (slug: string) => `/problems/${slug}`;
