import type { TestApp } from "../support/app";

/** /metrics through `app.handle`, as the text a scraper gets and its samples by series (`name{labels}` → value). */
export async function scrape(t: TestApp, headers: Record<string, string> = {}) {
  const response = await t.handle(new Request(`${t.publicUrl}/metrics`, { headers }));
  const text = await response.text();
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return { response, text, samples };
}

/** The log lines the app wrote with this message, parsed. */
export const logLines = (t: TestApp, msg: string) =>
  t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === msg);
