import { t } from "elysia";

/** What a refused path id is told (Elysia's 422 for the schema below, and http/native-routes.ts's own). */
export const ID_REFUSED = "id: must not contain control characters or be longer than 100 characters";

/**
 * Path ids are looked up as given: an id that is not one of ours is simply unknown (404). One with control characters
 * cannot be (and PostgreSQL could not even compare it): refused as invalid.
 */
export const ID = t.String({
  maxLength: 100,
  pattern: "^[^\\u0000-\\u001f\\u007f]*$",
  error: ID_REFUSED,
});
export const IdParams = t.Object({ id: ID });
