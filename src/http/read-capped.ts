/**
 * Reads a body up to `limit` bytes. Past the limit it stops reading, cancels the stream (so the peer is not
 * read to the end) and answers undefined; the caller says what "too large" means where it is.
 */
export async function readCapped(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Buffer | undefined> {
  if (!body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    size += next.value.byteLength;
    if (size > limit) {
      // Not awaited: a body made from another Request's (a copy, as in-process callers make) never settles its
      // cancel in Bun, which held the answer for ever (found by review).
      void reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(next.value);
  }
  return Buffer.concat(chunks);
}

/**
 * A request's body up to `limit` bytes; undefined past it. A declared Content-Length over the limit is refused unread;
 * one within it is what the server reads (no more), so the body is taken whole, natively; an undeclared one is counted
 * as it streams.
 */
export async function readRequestCapped(request: Request, limit: number): Promise<Buffer | undefined> {
  const declared = request.headers.get("content-length");
  if (declared === null) return readCapped(request.body, limit);
  if (Number(declared) > limit) return undefined;
  const bytes = Buffer.from(await request.arrayBuffer());
  return bytes.byteLength > limit ? undefined : bytes;
}
