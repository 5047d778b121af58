import { Elysia } from "elysia";
import { Problem } from "../http-errors/model";
import type { AuthPlugin } from "../users/auth-plugin";
import type { PresetCatalog } from "./catalog";
import { PresetList } from "./model";

export function presetRoutes(catalog: PresetCatalog, auth: AuthPlugin) {
  return new Elysia({ prefix: "/api/v1/connectors", detail: { tags: ["Presets"] } })
    .use(auth)
    .get("/presets", () => ({ items: catalog.list() }), {
      auth: true,
      response: { 200: PresetList, 401: Problem },
      detail: {
        summary: "List presets",
        description:
          "The preset catalog: URL, metadata and stdio image and command. Client secrets and env values are never shown.",
      },
    });
}
