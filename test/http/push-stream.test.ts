import { expect, test } from "bun:test";
import { connect } from "node:net";
import { pushStream } from "../../src/http/push-stream";
import { waitFor } from "../support/wait";

// A stream the service writes as things happen (src/http/push-stream.ts), served by Bun to a real socket on 127.0.0.1.

/** A server answering one GET with `stream`'s body, and a client of it: `reading` says whether the client reads. */
async function served(stream: ReturnType<typeof pushStream>, reading: boolean) {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(stream.body, { headers: { "content-type": "text/event-stream" } }),
  });
  let received = 0;
  const socket = connect(server.port!, "127.0.0.1");
  socket.on("data", (chunk: Buffer) => void (received += chunk.byteLength));
  socket.on("error", () => undefined);
  socket.write("GET / HTTP/1.1\r\nHost: test\r\n\r\n");
  if (!reading) socket.pause();
  await waitFor("the response to start", () => received > 0 || !reading, 5_000);
  await Bun.sleep(100);
  return {
    received: () => received,
    stop: () => {
      socket.destroy();
      server.stop(true);
    },
  };
}

const CHUNK = new Uint8Array(64 * 1024).fill(120);

test("a client that does not read: past the backlog the stream ends, and the writer is told", async () => {
  let ended = 0;
  const stream = pushStream(() => ended++, 1024 * 1024);
  const client = await served(stream, false);
  try {
    let written = 0;
    // Bounded: the socket takes a few MiB, then at most the backlog waits here.
    while (written < 64 * 1024 * 1024 && stream.push(CHUNK)) written += CHUNK.byteLength;
    expect(stream.push(CHUNK)).toBe(false);
    expect(stream.open).toBe(false);
    expect(ended).toBe(1);
    // What the socket took, and the backlog: not the 64 MiB a writer without a bound would have held.
    expect(written).toBeLessThan(32 * 1024 * 1024);
  } finally {
    client.stop();
  }
});

test("a client that reads gets everything written, however much, and the stream ends when closed", async () => {
  let ended = 0;
  const stream = pushStream(() => ended++, 1024 * 1024);
  const client = await served(stream, true);
  try {
    let written = 0;
    for (let i = 0; i < 256; i++) {
      expect(stream.push(CHUNK)).toBe(true);
      written += CHUNK.byteLength;
      // A writer as the service's are: an event now and then, the client reading meanwhile.
      if (i % 16 === 0) await Bun.sleep(5);
    }
    stream.close();
    await waitFor("every byte at the client", () => client.received() >= written, 10_000);
    expect(ended).toBe(0);
    expect(stream.push(CHUNK)).toBe(false);
  } finally {
    client.stop();
  }
});

test("the client going away ends the stream: the writer is told once, and writing answers false", async () => {
  let ended = 0;
  const stream = pushStream(() => ended++);
  const client = await served(stream, true);
  expect(stream.push(CHUNK)).toBe(true);
  client.stop();
  await waitFor("the writer told", () => ended === 1, 5_000);
  expect(stream.push(CHUNK)).toBe(false);
  expect(ended).toBe(1);
});
