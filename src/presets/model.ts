import { t } from "elysia";

/** Display information of a connector or preset (docs/interface.md §4.1, §4.2); extra keys are kept. */
export const Metadata = t.Object(
  {
    name: t.Optional(t.String({ maxLength: 200 })),
    description: t.Optional(t.String({ maxLength: 2000 })),
  },
  { additionalProperties: true, description: "Display information such as name and description." },
);
export type Metadata = typeof Metadata.static;

/** Stdio configuration of a preset: what a managed connector runs (docs/interface.md §5). */
export const StdioConfig = t.Object(
  {
    image: t.String({ minLength: 1 }),
    command: t.Optional(t.Array(t.String())),
    args: t.Optional(t.Array(t.String())),
    env: t.Optional(t.Record(t.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }), t.String())),
    access_token_env_name: t.Optional(t.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" })),
  },
  { additionalProperties: false },
);

/** A preset as administrators write it in CONNECTOR__PRESETS (docs/interface.md §4.2). */
export const Preset = t.Object(
  {
    url: t.String({ minLength: 1, maxLength: 2048 }),
    client_id: t.Optional(t.String({ minLength: 1 })),
    client_secret: t.Optional(t.String({ minLength: 1 })),
    metadata: t.Optional(Metadata),
    stdio: t.Optional(StdioConfig),
  },
  { additionalProperties: false },
);
export type Preset = typeof Preset.static;

/** What the API shows of a preset: never client secrets or env values. */
export const PresetView = t.Object({
  url: t.String(),
  metadata: Metadata,
  has_client_credentials: t.Boolean({ description: "Whether the preset supplies an OAuth client id." }),
  stdio: t.Optional(
    t.Object({
      image: t.String(),
      command: t.Optional(t.Array(t.String())),
      args: t.Optional(t.Array(t.String())),
      env_names: t.Array(t.String(), { description: "Names of the environment variables set; values are not shown." }),
      access_token_env_name: t.Optional(t.String()),
    }),
  ),
});
export type PresetView = typeof PresetView.static;

export const PresetList = t.Object({ items: t.Array(PresetView) });
