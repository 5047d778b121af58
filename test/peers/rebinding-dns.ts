import { createSocket } from "node:dgram";

/** Which IPv4 address a name's n-th A query (0-based) is answered with; undefined: the name does not exist. */
export type Plan = (n: number) => string | undefined;

/**
 * A DNS server (RFC 1035) that answers each query of a name as a plan says, with TTL 0: a name that is one address to
 * the first lookup and another to the next (DNS rebinding). A queries only; AAAA and the rest get an empty answer, so
 * resolvers ask for A. Used inside a network namespace whose resolv.conf points here (test/security/rebinding.test.ts).
 */
export async function startPlannedDns(host: string, port: number, plans: Map<string, Plan>) {
  const counts = new Map<string, number>();
  const socket = createSocket("udp4");
  socket.on("message", (query, peer) => {
    const answer = respond(query, (name) => {
      const plan = plans.get(name);
      if (!plan) return undefined;
      const n = counts.get(name) ?? 0;
      counts.set(name, n + 1);
      return plan(n);
    });
    if (answer) socket.send(answer, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(port, host, resolve));
  return {
    /** How many A queries each name got. */
    counts,
    close: () => socket.close(),
  };
}

/** The answer to one query message, or undefined when it is not one this server reads. */
function respond(query: Buffer, addressOf: (name: string) => string | undefined): Buffer | undefined {
  if (query.length < 12 || query.readUInt16BE(4) !== 1) return undefined; // RFC 1035 §4.1.1: exactly one question
  const labels: string[] = [];
  let at = 12;
  for (let length = query[at]!; length > 0; length = query[at]!) {
    if (length > 63 || at + 1 + length > query.length) return undefined;
    labels.push(
      query
        .subarray(at + 1, at + 1 + length)
        .toString("ascii")
        .toLowerCase(),
    );
    at += 1 + length;
  }
  const end = at + 5; // the root label, QTYPE, QCLASS (§4.1.2)
  if (end > query.length) return undefined;
  const type = query.readUInt16BE(at + 1);
  const name = labels.join(".");
  const address = type === 1 ? addressOf(name) : undefined;
  const known = type !== 1 || address !== undefined;
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0); // the query's ID
  header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x0100) | (known ? 0 : 3), 2); // QR, AA, RD as asked; NXDOMAIN
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(address ? 1 : 0, 6);
  const question = query.subarray(12, end);
  if (!address) return Buffer.concat([header, question]);
  const record = Buffer.alloc(16);
  record.writeUInt16BE(0xc00c, 0); // the name, by pointer to the question (§4.1.4)
  record.writeUInt16BE(1, 2); // A
  record.writeUInt16BE(1, 4); // IN
  record.writeUInt32BE(0, 6); // TTL 0: nobody may cache it
  record.writeUInt16BE(4, 10);
  address.split(".").forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
  return Buffer.concat([header, question, record]);
}
