import { t } from "elysia";

/**
 * Path ids are looked up as given: an id that is not one of ours is simply unknown (404). One with control characters
 * cannot be (and PostgreSQL could not even compare it): refused as invalid.
 */
export const ID = t.String({
  maxLength: 100,
  pattern: "^[^\\u0000-\\u001f\\u007f]*$",
  error: "id: must not contain control characters",
});
export const IdParams = t.Object({ id: ID });
