import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { createReadStream, createWriteStream, existsSync, type ReadStream, type WriteStream } from "node:fs";
import { join } from "node:path";

/**
 * The MCP server's stdio as two named pipes in a shared volume (the Kubernetes pod: the server container
 * runs `<command> < DIR/in > DIR/out`). Newline-delimited JSON-RPC, framed by the SDK's own helpers.
 */
export function fifoTransport(dir: string, waitMs = 60_000): Transport {
  let input: WriteStream | undefined;
  let output: ReadStream | undefined;
  const buffer = new ReadBuffer();
  const transport: Transport = {
    async start() {
      const until = Date.now() + waitMs;
      while (!existsSync(join(dir, "in")) || !existsSync(join(dir, "out"))) {
        if (Date.now() > until) throw new Error(`the pipes ${dir}/in and ${dir}/out did not appear within ${waitMs / 1000} s`);
        await Bun.sleep(100);
      }
      output = createReadStream(join(dir, "out"));
      input = createWriteStream(join(dir, "in"));
      output.on("data", (chunk) => {
        buffer.append(chunk as Buffer);
        for (let message = buffer.readMessage(); message; message = buffer.readMessage()) transport.onmessage?.(message);
      });
      output.on("end", () => transport.onclose?.());
      output.on("error", (e) => transport.onerror?.(e));
      input.on("error", (e) => transport.onerror?.(e));
    },
    send(message: JSONRPCMessage) {
      return new Promise<void>((resolve, reject) => {
        if (!input) return reject(new Error("not started"));
        input.write(serializeMessage(message), (e) => (e ? reject(e) : resolve()));
      });
    },
    async close() {
      input?.end();
      output?.destroy();
    },
  };
  return transport;
}
