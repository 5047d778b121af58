import { t } from "elysia";

/** Path ids are looked up as given: an id that is not one of ours is simply unknown (404). */
export const IdParams = t.Object({ id: t.String({ maxLength: 100 }) });
