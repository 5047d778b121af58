/**
 * An event's data ([HTML §9.2.6](https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)):
 * its `data:` lines, each without the field name and one optional space, joined by line feeds; undefined when it has
 * none. `block` is one event with line feeds only (CR and CRLF already turned into LF).
 */
export function eventData(block: string): string | undefined {
  const data: string[] = [];
  for (const line of block.split("\n")) if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
  return data.length === 0 ? undefined : data.join("\n");
}
