import { Value } from "@sinclair/typebox/value";
import { normaliseUrl, parseConnectorUrl } from "../urls/server-url";
import { Preset } from "./model";

/**
 * Reads CONNECTOR__PRESETS. Throws an Error whose message names the bad entry
 * (`[1].url: ...`) so the start-up error points at it.
 */
export function parsePresets(json: string): Preset[] {
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
    const preset = entry as Preset;
    const url = parseConnectorUrl(preset.url);
    if (!url.ok) throw new Error(`${where}.url: "${preset.url}" ${url.reason}`);
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
