import { afterAll, describe, expect, test } from "bun:test";
import { directStream } from "../../src/http/direct-stream";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A source that gives `chunks` one by one, `gapMs` apart, then ends (or fails, with `fail`). */
function source(chunks: string[], gapMs = 0, fail = false) {
  let i = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (gapMs) await Bun.sleep(gapMs);
        if (i < chunks.length) return controller.enqueue(encoder.encode(chunks[i++]!));
        if (fail) controller.error(new Error("broke off"));
        else controller.close();
      },
      cancel: () => void (cancelled = true),
    },
    { highWaterMark: 0 },
  );
  return { stream, cancelled: () => cancelled, given: () => i };
}

function tracked(from: ReadableStream<Uint8Array>) {
  const seen: string[] = [];
  let ends = 0;
  const direct = directStream(from, { chunk: (bytes) => seen.push(decoder.decode(bytes)), end: () => ends++ });
  return { ...direct, seen, ends: () => ends };
}

// Bun.serve on loopback: the way the service hands these streams to its clients.
const served: { stream?: ReadableStream<Uint8Array> } = {};
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => new Response(served.stream!, { headers: { "content-type": "text/event-stream" } }),
});
afterAll(() => server.stop(true));

describe("a direct stream (http/direct-stream.ts)", () => {
  test("passes every chunk in order, each as it comes, and tells the end once", async () => {
    const s = source(["a", "b", "c"], 30);
    const t = tracked(s.stream);
    const reader = t.body.getReader();
    const first = await reader.read();
    // The first chunk is out before the source has given the rest (nothing is read ahead but the next).
    expect(decoder.decode(first.value)).toBe("a");
    expect(s.given()).toBeLessThanOrEqual(2);
    let rest = "";
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += decoder.decode(next.value);
    expect(rest).toBe("bc");
    expect(t.seen).toEqual(["a", "b", "c"]);
    expect(t.ends()).toBe(1);
  });

  test("a source that breaks off: the stream closes (no error midway) and the end is told once", async () => {
    const t = tracked(source(["a"], 0, true).stream);
    expect(await new Response(t.body).text()).toBe("a");
    expect(t.ends()).toBe(1);
  });

  test("a reader's cancel ends the source, once", async () => {
    const s = source(["a", "b", "c", "d"], 20);
    const t = tracked(s.stream);
    const reader = t.body.getReader();
    await reader.read();
    await reader.cancel("enough");
    await Bun.sleep(50);
    expect(s.cancelled()).toBe(true);
    expect(t.ends()).toBe(1);
  });

  test("close ends it early for its client, before or while it is read", async () => {
    const early = tracked(source(["a", "b"], 20).stream);
    early.close();
    expect(await new Response(early.body).text()).toBe("");
    expect(early.ends()).toBe(1);
    const s = source(["a", "b", "c", "d", "e"], 20);
    const midway = tracked(s.stream);
    const reader = midway.body.getReader();
    await reader.read();
    midway.close();
    let more = 0;
    for (let next = await reader.read(); !next.done; next = await reader.read()) more++;
    expect(more).toBeLessThanOrEqual(1);
    expect(s.cancelled()).toBe(true);
    expect(midway.ends()).toBe(1);
  });

  test("served by Bun.serve: a client that goes away ends the source, and the end is told once", async () => {
    const s = source(
      Array.from({ length: 100 }, (_, i) => `data: ${i}\n\n`),
      20,
    );
    const t = tracked(s.stream);
    served.stream = t.body;
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${server.port}/`, { signal: controller.signal });
    const reader = response.body!.getReader();
    expect(decoder.decode((await reader.read()).value)).toContain("data: 0");
    controller.abort();
    for (let i = 0; i < 50 && !s.cancelled(); i++) await Bun.sleep(20);
    expect(s.cancelled()).toBe(true);
    expect(t.ends()).toBe(1);
  });
});
