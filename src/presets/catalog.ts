import { normaliseUrl, parseConnectorUrl } from "../urls/server-url";
import type { Preset, PresetView } from "./model";

export type PresetCatalog = {
  list(): PresetView[];
  /** The preset whose URL equals `url` after normalisation, if any (docs/interface.md §4.2). */
  match(url: URL): Preset | undefined;
};

export function createPresetCatalog(presets: readonly Preset[]): PresetCatalog {
  const byUrl = new Map<string, Preset>();
  for (const preset of presets) {
    const parsed = parseConnectorUrl(preset.url);
    if (parsed.ok) byUrl.set(normaliseUrl(parsed.url), preset);
  }
  const views = presets.map(toView);
  return {
    list: () => views,
    match: (url) => byUrl.get(normaliseUrl(url)),
  };
}

function toView(preset: Preset): PresetView {
  return {
    url: preset.url,
    metadata: preset.metadata ?? {},
    has_client_credentials: preset.client_id !== undefined,
    ...(preset.stdio && {
      stdio: {
        image: preset.stdio.image,
        ...(preset.stdio.command && { command: preset.stdio.command }),
        ...(preset.stdio.args && { args: preset.stdio.args }),
        env_names: Object.keys(preset.stdio.env ?? {}),
        ...(preset.stdio.access_token_env_name && { access_token_env_name: preset.stdio.access_token_env_name }),
      },
    }),
  };
}
