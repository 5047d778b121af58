// Ready-to-paste client configurations for a connector's proxy URL: VS Code, a desktop host through mcp-remote,
// Cursor, a curl session and the MCP SDK in TypeScript. Each authenticates with an API token (a placeholder here: the
// console never holds one; they are made under "API tokens").
import { copyText, h, hidden, openDialog, uid } from "./dom.js";

const TOKEN = "YOUR_API_TOKEN";

/** A short name for the server in a client's configuration: lower-case letters, digits and dashes. */
const slugOf = (name) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40) || "connector";

/** A string as a POSIX shell reads it back unchanged: single-quoted. */
const shellQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The configurations, each `{ id, title, where, text }`, for `url` (the proxy URL) and a tool to call. */
export function clientConfigs(name, url, tool) {
  const slug = slugOf(name);
  const toolName = tool || "TOOL_NAME";
  const json = (value) => JSON.stringify(value, null, 2);
  const mcpRemoteArgs = ["-y", "mcp-remote", url, "--header", "Authorization:${CS_AUTH_HEADER}"];
  // mcp-remote refuses plain http except to localhost unless told; the service may be served on http.
  if (url.startsWith("http:")) mcpRemoteArgs.push("--allow-http");
  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
  });
  const call = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: toolName, arguments: {} } });
  return [
    {
      id: "vscode",
      title: "VS Code",
      where: ".vscode/mcp.json (VS Code asks for the token once and keeps it in its secret storage)",
      text: json({
        inputs: [
          { type: "promptString", id: "connector-service-token", description: "connector-service API token", password: true },
        ],
        servers: {
          [slug]: { type: "http", url, headers: { Authorization: "Bearer ${input:connector-service-token}" } },
        },
      }),
    },
    {
      id: "desktop",
      title: "Desktop host (mcp-remote)",
      where:
        "a desktop host's MCP configuration, such as claude_desktop_config.json: a local stdio bridge, run with npx (the header goes through an environment variable: no spaces in arguments)",
      text: json({
        mcpServers: { [slug]: { command: "npx", args: mcpRemoteArgs, env: { CS_AUTH_HEADER: `Bearer ${TOKEN}` } } },
      }),
    },
    {
      id: "cursor",
      title: "Cursor",
      where: "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
      text: json({ mcpServers: { [slug]: { url, headers: { Authorization: `Bearer ${TOKEN}` } } } }),
    },
    {
      id: "curl",
      title: "curl",
      where: "bash: a whole MCP session by hand (2025-11-25 Streamable HTTP)",
      text: [
        `export TOKEN=${TOKEN}`,
        `export MCP=${shellQuote(url)}`,
        `H=(-H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream')`,
        "",
        "# 1. initialize: the answer's Mcp-Session-Id header names the session",
        `SID=$(curl -s -D - -o /dev/null "\${H[@]}" -X POST "$MCP" -d ${shellQuote(initialize)} \\`,
        `  | tr -d '\\r' | awk -F': ' 'tolower($1)=="mcp-session-id" {print $2}')`,
        "# every later request: the session, and the protocol version initialize answered (2025-11-25 unless the server is older)",
        'S=(-H "mcp-session-id: $SID" -H "mcp-protocol-version: 2025-11-25")',
        "",
        "# 2. notifications/initialized (answered 202, no body)",
        `curl -s "\${H[@]}" "\${S[@]}" -X POST "$MCP" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'`,
        "",
        "# 3. the tools, then a call (answers come as JSON or as an event stream: data: lines)",
        `curl -s "\${H[@]}" "\${S[@]}" -X POST "$MCP" -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'`,
        `curl -s "\${H[@]}" "\${S[@]}" -X POST "$MCP" -d ${shellQuote(call.replace('"id":2', '"id":3'))}`,
        "",
        "# 4. end the session",
        `curl -s -H "authorization: Bearer $TOKEN" "\${S[@]}" -X DELETE "$MCP"`,
      ].join("\n"),
    },
    {
      id: "sdk",
      title: "TypeScript SDK",
      where: "a program with @modelcontextprotocol/sdk (npm); run it with CS_TOKEN set to your token",
      text: [
        'import { Client } from "@modelcontextprotocol/sdk/client/index.js";',
        'import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";',
        "",
        `const transport = new StreamableHTTPClientTransport(new URL(${JSON.stringify(url)}), {`,
        "  requestInit: { headers: { Authorization: `Bearer ${process.env.CS_TOKEN}` } },",
        "});",
        'const client = new Client({ name: "my-agent", version: "1.0.0" });',
        "await client.connect(transport);",
        "console.log((await client.listTools()).tools.map((tool) => tool.name));",
        `console.log(await client.callTool({ name: ${JSON.stringify(toolName)}, arguments: {} }));`,
        "await transport.terminateSession();",
        "await client.close();",
      ].join("\n"),
    },
  ];
}

/** The dialog: one section per client, each with its text and a Copy button. */
export function openClientConfigs(name, url, tool) {
  return openDialog({
    title: `Use ${name} from an MCP client`,
    wide: true,
    initialFocus: "button[data-close]",
    build: (close) =>
      h(
        "div",
        { class: "stack" },
        h(
          "p",
          {},
          "Each needs an API token of yours in place of ",
          h("code", {}, TOKEN),
          ": make one under ",
          h("a", { href: "#tokens", onclick: close }, "API tokens"),
          ". Clients that do MCP authorization themselves need only the URL: they sign in to this service in your browser.",
        ),
        clientConfigs(name, url, tool).map((config) => {
          const id = uid("config");
          const code = h("pre", { class: "code", id, "data-config": config.id, tabindex: "0" }, config.text);
          return h(
            "section",
            { class: "config", "aria-labelledby": `${id}-title` },
            h("h3", { id: `${id}-title` }, config.title),
            h("p", { class: "hint" }, config.where),
            code,
            h(
              "button",
              { type: "button", class: "button small", onclick: () => copyText(config.text) },
              "Copy",
              hidden(` the ${config.title} configuration`),
            ),
          );
        }),
        h(
          "div",
          { class: "actions" },
          h("button", { type: "button", class: "button", "data-close": true, onclick: close }, "Close"),
        ),
      ),
  });
}
