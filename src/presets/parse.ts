import { Value } from "@sinclair/typebox/value";
import { normaliseUrl, parseConnectorUrl } from "../urls/server-url";
import { Preset } from "./model";

/**
 * Reads CONNECTOR__PRESETS. Throws an Error whose message names the bad entry
 * (`[1].url: ...`) so the start-up error points at it. An `mcp+stdio://` entry without `stdio` whose URL is one of
 * `builtins` takes that preset's `stdio` (and its metadata when it gives none): the demo preset's command is the
 * running executable, which no setting could spell.
 */
export function parsePresets(json: string, builtins: readonly Preset[] = []): Preset[] {
  const builtin = new Map<string, Preset>();
  for (const preset of builtins) {
    const url = parseConnectorUrl(preset.url);
    if (url.ok && preset.stdio) builtin.set(normaliseUrl(url.url), preset);
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (e) {
    throw new Error(`is not valid JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(value)) throw new Error("must be a JSON array of presets");
  const seen = new Map<string, number>();
  return value.map((entry, i) => {
    const where = `[${i}]`;
    const first = Value.Errors(Preset, entry).First();
    if (first) throw new Error(`${where}${first.path.replaceAll("/", ".") || ""}: ${first.message}`);
    let preset = entry as Preset;
    const url = parseConnectorUrl(preset.url);
    if (!url.ok) throw new Error(`${where}.url: "${preset.url}" ${url.reason}`);
    const known = builtin.get(normaliseUrl(url.url));
    if (known && !preset.stdio) preset = { metadata: known.metadata, ...preset, stdio: known.stdio };
    const stdioScheme = url.url.protocol === "mcp+stdio:";
    if (stdioScheme && !preset.stdio) throw new Error(`${where}.stdio: required for an mcp+stdio:// URL`);
    if (!stdioScheme && preset.stdio) throw new Error(`${where}.stdio: only allowed for an mcp+stdio:// URL`);
    const key = normaliseUrl(url.url);
    const dup = seen.get(key);
    if (dup !== undefined) throw new Error(`${where}.url: same URL as entry [${dup}]`);
    seen.set(key, i);
    return preset;
  });
}
