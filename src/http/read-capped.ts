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
      await reader.cancel();
      return undefined;
    }
    chunks.push(next.value);
  }
  return Buffer.concat(chunks);
}
