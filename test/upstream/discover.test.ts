import { expect, test } from "bun:test";
import { supportedVersions } from "../../src/upstream/discover";

const answer = { jsonrpc: "2.0", id: "connector-service-discover", result: { supportedVersions: ["2026-07-28", "bogus"] } };

test("server/discover's answer is found as JSON, or in an event stream however its data lines are cut", () => {
  expect(supportedVersions(JSON.stringify(answer), "application/json")).toEqual(["2026-07-28"]);
  // One event whose message is spread over several data lines (HTML §9.2.6 joins them with line feeds).
  const spread = JSON.stringify(answer, null, 1)
    .split("\n")
    .map((line) => `data: ${line}`)
    .join("\r\n");
  expect(supportedVersions(`id: 7\r\n${spread}\r\n\r\n`, "text/event-stream")).toEqual(["2026-07-28"]);
  expect(supportedVersions('event: message\ndata: {"jsonrpc":"2.0","id":"other","result":{}}\n\n', "text/event-stream")).toEqual(
    [],
  );
});
