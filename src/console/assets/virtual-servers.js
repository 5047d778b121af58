// Virtual servers: one MCP URL over a chosen set of one's connectors. The list with each member's status and the
// names left out (conflicts), create and edit (members and their prefixes, failure mode, tool mode), delete, the MCP
// URL to copy, "Try it" (tryit.js) and client configurations (clients.js). The API is docs/interface.md §9.
import { api, page } from "./api.js";
import { openClientConfigs } from "./clients.js";
import { openTryIt } from "./tryit.js";
import { announce, busy, confirmAction, copyField, facts, formDialog, h, hidden, uid, when } from "./dom.js";

/** The API's limits (virtual-servers/model.ts, names.ts). */
const PREFIX = /^(?:[a-z0-9][a-z0-9-]{0,23})?$/;
const MAX_MEMBERS = 50;

const list = () => document.getElementById("virtual-list");
const servers = new Map();
let nextCursor = null;
/** Connector names by id, for the member lists (loaded with the view, and again by the editor). */
let connectorNames = new Map();

const mcpPathOf = (id) => `/api/v1/virtual-servers/${encodeURIComponent(id)}/mcp`;
const connectorLabel = (c) => (c.metadata && c.metadata.name) || c.url;

export function initVirtualServers() {
  document.getElementById("add-virtual").addEventListener("click", () => openEditor(null));
  document.getElementById("virtual-more").addEventListener("click", (e) => busy(e.currentTarget, () => load(nextCursor)));
}

export async function showVirtualServers() {
  try {
    connectorNames = new Map((await myConnectors()).map((c) => [c.id, connectorLabel(c)]));
  } catch {
    // The members are then shown by id; load() says what failed.
  }
  await load(null);
}

export function resetVirtualServers() {
  servers.clear();
  nextCursor = null;
  list().replaceChildren();
}

/** The first page (`cursor` null), or the next one appended. */
async function load(cursor) {
  try {
    const result = await page("/api/v1/virtual-servers", cursor);
    if (!cursor) servers.clear();
    for (const s of result.items) servers.set(s.id, s);
    nextCursor = result.next_cursor;
    render();
  } catch (error) {
    announce(`Could not load your virtual servers: ${error.message}`);
  }
}

function render() {
  list().replaceChildren(...[...servers.values()].map(card));
  document.getElementById("virtual-empty").hidden = servers.size > 0;
  document.getElementById("virtual-more").hidden = !nextCursor;
}

/** Every connector of the person's (every page): who can be a member. */
async function myConnectors() {
  const all = [];
  let cursor = null;
  do {
    const result = await page("/api/v1/connectors", cursor);
    all.push(...result.items);
    cursor = result.next_cursor;
  } while (cursor);
  return all;
}

function memberRow(m, names) {
  const label = names.get(m.connector_id) ?? m.connector_id;
  return h(
    "li",
    { "data-member": m.connector_id, "data-status": m.status },
    h("span", { class: "mono" }, m.prefix === "" ? "(no prefix)" : `${m.prefix}__`),
    " ",
    label,
    " — ",
    h("span", { class: m.status === "ok" ? "ok" : "reason" }, m.status === "ok" ? "ok" : `unavailable: ${m.reason ?? m.state}`),
  );
}

function card(s) {
  const names = connectorNames;
  const titleId = uid("virtual");
  const button = (key, label, onclick, cls = "button small") =>
    h("button", { type: "button", class: cls, "data-focus-key": key, onclick }, label, hidden(` ${s.name}`));
  const url = s.mcp_url;
  return h(
    "li",
    { class: "card", "data-id": s.id, "aria-labelledby": titleId },
    h(
      "div",
      { class: "card-head" },
      h("h2", { id: titleId, tabindex: "-1" }, s.name),
      h("span", { class: "state" }, `${s.members.length} member${s.members.length === 1 ? "" : "s"}`),
    ),
    s.description ? h("p", { class: "muted" }, s.description) : null,
    s.members.length
      ? h(
          "ul",
          { class: "members", "aria-label": `Members of ${s.name}` },
          s.members.map((m) => memberRow(m, names)),
        )
      : h("p", { class: "muted" }, "No members yet: edit it to add connectors."),
    s.conflicts.length
      ? h(
          "div",
          { class: "reason", "data-conflicts": true },
          h("p", {}, h("strong", {}, "Left out: "), "names two members offer, or longer than 64 characters."),
          h(
            "ul",
            {},
            s.conflicts.map((c) =>
              h(
                "li",
                {},
                `${c.kind} `,
                h("span", { class: "mono" }, c.name),
                ` (${c.members.map((id) => names.get(id) ?? id).join(", ")})`,
              ),
            ),
          ),
        )
      : null,
    facts([
      ["When a member is down", s.failure_mode === "open" ? "left out of listings" : "listings fail"],
      ["Tools", s.tool_mode === "search" ? "search_tools and call_tool" : "all listed"],
      ["Updated", when(s.updated_at)],
    ]),
    copyField("MCP URL", url),
    h(
      "div",
      { class: "actions" },
      s.members.length
        ? button("try", "Try it", () => openTryIt({ id: s.id }, s.name, mcpPathOf(s.id)), "button small primary")
        : null,
      button("clients", "Use from a client", () => openClientConfigs(s.name, url)),
      button("edit", "Edit", () => openEditor(s)),
      button("delete", "Delete", () => remove(s), "button small danger"),
    ),
  );
}

/**
 * The create (`s` null) and edit dialog: name, description, a row per connector of the person's (included or not,
 * with its prefix: empty for the default, a single "-" is not allowed so "(none)" is a checkbox), the modes.
 */
async function openEditor(s) {
  let connectors;
  try {
    connectors = await myConnectors();
  } catch (error) {
    return announce(`Could not load your connectors: ${error.message}`);
  }
  connectorNames = new Map(connectors.map((c) => [c.id, connectorLabel(c)]));
  const ids = { name: uid("vs-name"), description: uid("vs-description"), failure: uid("vs-failure"), tools: uid("vs-tools") };
  const name = h("input", { id: ids.name, name: "name", required: true, maxlength: "200", autocomplete: "off" });
  const description = h("input", { id: ids.description, name: "description", maxlength: "2000", autocomplete: "off" });
  const failure = h(
    "select",
    { id: ids.failure, name: "failure_mode" },
    h("option", { value: "open" }, "Leave a member that is down out of listings"),
    h("option", { value: "closed" }, "Fail the listing when a member is down"),
  );
  const tools = h(
    "select",
    { id: ids.tools, name: "tool_mode" },
    h("option", { value: "all" }, "List every tool"),
    h("option", { value: "search" }, "Two tools: search_tools and call_tool (for many tools)"),
  );
  const current = new Map((s ? s.members : []).map((m) => [m.connector_id, m.prefix]));
  name.value = s ? s.name : "";
  description.value = s && s.description ? s.description : "";
  failure.value = s ? s.failure_mode : "open";
  tools.value = s ? s.tool_mode : "all";

  const rows = connectors.map((c) => {
    const include = h("input", { type: "checkbox", id: uid("vs-member"), "data-member-include": c.id });
    include.checked = current.has(c.id);
    const prefix = h("input", {
      id: uid("vs-prefix"),
      "data-member-prefix": c.id,
      maxlength: "24",
      autocomplete: "off",
      spellcheck: "false",
      placeholder: "from its name",
    });
    prefix.value = current.get(c.id) ?? "";
    const none = h("input", { type: "checkbox", id: uid("vs-none"), "data-member-none": c.id });
    none.checked = current.get(c.id) === "";
    return {
      c,
      include,
      prefix,
      none,
      element: h(
        "li",
        { class: "member-choice" },
        h("label", { for: include.id }, include, " ", connectorLabel(c), h("span", { class: "muted small" }, ` ${c.state}`)),
        h(
          "div",
          { class: "row" },
          h("div", { class: "field" }, h("label", { for: prefix.id }, "Prefix", hidden(` of ${connectorLabel(c)}`)), prefix),
          h("label", { for: none.id, class: "small" }, none, " no prefix: its own tool names", hidden(` (${connectorLabel(c)})`)),
        ),
      ),
    };
  });

  formDialog({
    title: s ? `Edit ${s.name}` : "New virtual server",
    wide: true,
    submitLabel: s ? "Save" : "Create",
    fallbackFocus: () => document.getElementById("virtual-title"),
    fields: [
      h("div", { class: "field" }, h("label", { for: ids.name }, "Name"), name),
      h("div", { class: "field" }, h("label", { for: ids.description }, "Description"), description),
      h(
        "fieldset",
        { class: "stack" },
        h("legend", {}, "Members: your connectors, their tools and prompts named prefix__name"),
        connectors.length
          ? h(
              "ul",
              { class: "rows" },
              rows.map((r) => r.element),
            )
          : h("p", { class: "muted" }, "You have no connectors yet: add some under Connectors first."),
      ),
      h("div", { class: "field" }, h("label", { for: ids.failure }, "When a member is down"), failure),
      h("div", { class: "field" }, h("label", { for: ids.tools }, "Tools"), tools),
    ],
    submit: () => {
      if (!name.value.trim()) throw new Error("Give it a name.");
      const members = [];
      for (const r of rows) {
        if (!r.include.checked) continue;
        const prefix = r.prefix.value.trim();
        if (r.none.checked) members.push({ connector_id: r.c.id, prefix: "" });
        else if (prefix) {
          if (!PREFIX.test(prefix))
            throw new Error(`Prefix of ${connectorLabel(r.c)}: 1 to 24 of a-z 0-9 - (not starting with -).`);
          members.push({ connector_id: r.c.id, prefix });
        } else members.push({ connector_id: r.c.id });
      }
      if (members.length > MAX_MEMBERS) throw new Error(`At most ${MAX_MEMBERS} members.`);
      const body = { name: name.value.trim(), members, failure_mode: failure.value, tool_mode: tools.value };
      const text = description.value.trim();
      if (text) body.description = text;
      else if (s && s.description) body.description = null;
      return async (close) => {
        const saved = s
          ? await api("PATCH", `/api/v1/virtual-servers/${encodeURIComponent(s.id)}`, body)
          : await api("POST", "/api/v1/virtual-servers", body);
        servers.set(saved.id, saved);
        render();
        announce(`${saved.name} was ${s ? "saved" : "created"}. Its MCP URL is ${saved.mcp_url}.`);
        close();
      };
    },
  });
}

async function remove(s) {
  const ok = await confirmAction({
    title: `Delete “${s.name}”?`,
    message: "MCP clients using its URL lose it at once. The connectors themselves stay.",
    confirmLabel: "Delete",
  });
  if (!ok) return;
  try {
    await api("DELETE", `/api/v1/virtual-servers/${encodeURIComponent(s.id)}`);
    servers.delete(s.id);
    render();
    announce(`Deleted “${s.name}”.`);
  } catch (error) {
    announce(`Could not delete “${s.name}”: ${error.message}`);
  }
  document.getElementById("virtual-title").focus();
}
