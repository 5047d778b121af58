// Connectors: the list (kept current by the events stream), create, edit (URL and metadata), connect (OAuth in a
// window of its own, or headers), re-authorize, disconnect, delete, the proxy URL to copy, "Try it" (tryit.js) and
// client configurations (clients.js), its tools and their policy (tools.js).
import { api, page } from "./api.js";
import { openClientConfigs } from "./clients.js";
import { openTools } from "./tools.js";
import { openTryIt } from "./tryit.js";
import { announce, busy, confirmAction, copyField, facts, formDialog, h, hidden, replaceKeepingFocus, uid, when } from "./dom.js";

const STATE_LABELS = {
  created: "Not connected",
  auth_required: "Waiting for sign-in",
  connected: "Connected",
  disconnected: "Disconnected",
};

const list = () => document.getElementById("connector-list");
const connectors = new Map();
/** Per connector, the number of the latest fetch of it: an older answer arriving late is dropped. */
const fetches = new Map();
/** OAuth windows the console opened, by connector: closed once the connector is connected (or the attempt failed). */
const authWindows = new Map();
let nextCursor = null;
let loaded = false;
let loading = null;
let events = null;
/** Events that arrive while the list loads, applied after it. */
let held = null;
let presets = null;

const nameOf = (c) => (c.metadata && c.metadata.name) || hostOf(c.url);
function hostOf(url) {
  try {
    return new URL(url).host || url;
  } catch {
    return url;
  }
}
/** SERVER__PUBLIC_URL (from the session): where MCP clients reach the service, whatever name the console was opened at. */
let publicUrl = null;
export function setPublicUrl(url) {
  publicUrl = typeof url === "string" && url ? url.replace(/\/+$/, "") : null;
}
const proxyPathOf = (id) => `/api/v1/connectors/${encodeURIComponent(id)}/mcp`;
const proxyUrlOf = (id) => `${publicUrl ?? location.origin}${proxyPathOf(id)}`;
/** The tools "Try it" last listed, per connector: the client configurations call the first. */
const knownTools = new Map();
const newer = (a, b) => !b || !a || String(a.updated_at) >= String(b.updated_at);

/** A connector's name, when the list has it (the grants list names connectors by id). */
export function connectorName(id) {
  const c = connectors.get(id);
  return c ? nameOf(c) : null;
}

export function initConnectors() {
  document.getElementById("add-connector").addEventListener("click", openCreate);
  document.getElementById("connectors-more").addEventListener("click", (e) => busy(e.currentTarget, loadMore));
}

/** The view is shown: the list is loaded once per sign-in, then kept current by the events stream. */
export function showConnectors() {
  followEvents();
  if (!loaded && !loading) loading = load().finally(() => (loading = null));
  return loading;
}

/** Signed out: forget everything, stop following events, close the OAuth windows. */
export function resetConnectors() {
  if (events) events.close();
  events = null;
  connectors.clear();
  fetches.clear();
  for (const w of authWindows.values()) closeWhenPossible(w);
  authWindows.clear();
  nextCursor = null;
  loaded = false;
  held = null;
  presets = null;
  list().replaceChildren();
  document.getElementById("connectors-empty").hidden = true;
  document.getElementById("connectors-more").hidden = true;
}

async function load() {
  held = [];
  try {
    const first = await page("/api/v1/connectors");
    connectors.clear();
    list().replaceChildren();
    for (const c of first.items) {
      connectors.set(c.id, c);
      list().append(card(c));
    }
    nextCursor = first.next_cursor;
    loaded = true;
  } catch (error) {
    announce(`Could not load the connectors: ${error.message}`);
  } finally {
    const pending = held ?? [];
    held = null;
    for (const [type, data] of pending) onEvent(type, data);
    refreshChrome();
  }
}

async function loadMore() {
  if (!nextCursor) return;
  const more = await page("/api/v1/connectors", nextCursor);
  for (const c of more.items) {
    if (connectors.has(c.id)) continue;
    connectors.set(c.id, c);
    list().append(card(c));
  }
  nextCursor = more.next_cursor;
  refreshChrome();
  announce(`${more.items.length} more connectors shown.`);
}

function refreshChrome() {
  document.getElementById("connectors-empty").hidden = !loaded || connectors.size > 0;
  document.getElementById("connectors-more").hidden = !nextCursor;
}

// ---- The events stream -------------------------------------------------------------------------------------

function followEvents() {
  if (events) return;
  const live = document.getElementById("live-state");
  live.textContent = "Live updates: connecting…";
  const source = new EventSource("/api/v1/connectors/events");
  events = source;
  for (const type of ["connector.created", "connector.updated", "connector.deleted"]) {
    source.addEventListener(type, (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        return;
      }
      if (held) held.push([type, data]);
      else onEvent(type, data);
    });
  }
  // Events older than the service keeps were missed: reload the list.
  source.addEventListener("reset", () => {
    loaded = false;
    showConnectors();
  });
  source.addEventListener("open", () => {
    live.textContent = "Live updates: on";
  });
  source.addEventListener("error", async () => {
    if (events !== source) return;
    live.textContent = "Live updates: reconnecting…";
    // The browser retries by itself unless the answer was an error status (the session ended, too many streams).
    if (source.readyState !== EventSource.CLOSED) return;
    events = null;
    try {
      await api("GET", "/api/v1/session");
    } catch {
      return; // signed out: the sign-in page is shown
    }
    setTimeout(() => {
      if (!events && document.getElementById("topbar").hidden === false) {
        followEvents();
        loaded = false;
        showConnectors();
      }
    }, 5000);
  });
}

function onEvent(type, data) {
  if (!data || typeof data.id !== "string") return;
  if (type === "connector.deleted") {
    fetches.set(data.id, (fetches.get(data.id) ?? 0) + 1);
    if (connectors.has(data.id)) {
      remove(data.id);
      announce(`${data.name || hostOf(data.url)} was deleted.`);
    }
    return;
  }
  const known = connectors.get(data.id);
  // Beyond the pages shown, an update is of a connector not on the screen.
  if (!known && type === "connector.updated" && nextCursor) return;
  if (known && newer(data, known)) {
    const merged = {
      ...known,
      state: data.state,
      disconnect_reason: data.disconnect_reason,
      url: data.url,
      updated_at: data.updated_at,
      metadata: { ...known.metadata, ...(data.name !== null && { name: data.name }) },
    };
    if (merged.state !== "auth_required") merged.auth_request = null;
    upsert(merged);
    if (known.state !== merged.state) announceState(merged);
  }
  if (finished(data)) closeAuthWindow(data.id);
  // The event carries what a list row needs; the rest (headers, the authorization URL) is read from the API.
  refetch(data.id);
}

/** An authorization came to an end: connected, or failed (the connector says why). */
const finished = (data) => data.state === "connected" || data.state === "disconnected";

function announceState(c) {
  const reason = c.state === "disconnected" && c.disconnect_reason ? `: ${c.disconnect_reason}` : "";
  announce(`${nameOf(c)} is ${STATE_LABELS[c.state].toLowerCase()}${reason}.`);
}

async function refetch(id) {
  const n = (fetches.get(id) ?? 0) + 1;
  fetches.set(id, n);
  try {
    const c = await api("GET", `/api/v1/connectors/${encodeURIComponent(id)}`);
    if (fetches.get(id) !== n) return;
    const known = connectors.get(id);
    if (!newer(c, known)) return;
    upsert(c);
    if (!known) announce(`${nameOf(c)} was added.`);
  } catch (error) {
    if (fetches.get(id) === n && error.status === 404) remove(id);
  }
}

// ---- The list ------------------------------------------------------------------------------------------------

function upsert(c) {
  const existing = list().querySelector(`li[data-id="${CSS.escape(c.id)}"]`);
  connectors.set(c.id, c);
  const fresh = card(c);
  if (existing) replaceKeepingFocus(existing, fresh);
  else list().prepend(fresh);
  refreshChrome();
  return fresh;
}

function remove(id) {
  connectors.delete(id);
  const existing = list().querySelector(`li[data-id="${CSS.escape(id)}"]`);
  if (existing) {
    const hadFocus = existing.contains(document.activeElement);
    const next = existing.nextElementSibling || existing.previousElementSibling;
    existing.remove();
    if (hadFocus) (next ? next.querySelector("h2") : document.getElementById("connectors-title")).focus();
  }
  refreshChrome();
}

function card(c) {
  const titleId = uid("connector");
  const name = nameOf(c);
  const button = (key, label, onclick, cls = "button small") =>
    h("button", { type: "button", class: cls, "data-focus-key": key, onclick }, label, hidden(` ${name}`));
  const actions = [];
  if (c.state === "connected") {
    actions.push(
      button(
        "try",
        "Try it",
        () => openTryIt(c, name, proxyPathOf(c.id), { onTools: (names) => knownTools.set(c.id, names) }),
        "button small primary",
      ),
    );
    actions.push(
      button("clients", "Use from a client", () => openClientConfigs(name, proxyUrlOf(c.id), (knownTools.get(c.id) ?? [])[0])),
    );
    actions.push(button("tools", "Tools", () => openToolsOf(c.id)));
  }
  if (c.state === "created") actions.push(button("connect", "Connect", () => openConnect(c.id), "button small primary"));
  if (c.state === "auth_required") {
    if (c.auth_request)
      actions.push(button("open-auth", "Open sign-in page", () => reopenAuthorization(c.id), "button small primary"));
    actions.push(button("connect", "Start again", () => openConnect(c.id)));
  }
  if (c.state === "disconnected")
    actions.push(button("reauthorize", "Re-authorize", () => openConnect(c.id), "button small primary"));
  if (c.state === "connected" || c.state === "auth_required")
    actions.push(button("disconnect", "Disconnect", () => disconnect(c.id)));
  actions.push(button("edit", "Edit", () => openEdit(c.id)));
  actions.push(button("delete", "Delete", () => deleteConnector(c.id), "button small danger"));

  let note = null;
  if (c.state === "disconnected" && c.disconnect_reason)
    note = h("p", { class: "reason", "data-reason": true }, h("strong", {}, "Reason: "), c.disconnect_reason);
  if (c.state === "auth_required")
    note = h(
      "div",
      { class: "reason waiting", "data-auth-pending": true },
      h(
        "p",
        {},
        c.disconnect_reason || "Waiting for you to approve at the server. MCP clients get “authorization pending” until then.",
      ),
      // The link itself, prominent: the window may have been blocked or closed, or the person may approve in another browser.
      c.auth_request
        ? h(
            "p",
            {},
            h("strong", {}, "Sign-in link: "),
            h(
              "a",
              { href: c.auth_request.authorization_url, target: "_blank", rel: "noopener noreferrer", "data-auth-link": true },
              hostOf(c.auth_request.authorization_url),
              hidden(` (sign in to ${name} there)`),
            ),
          )
        : null,
    );

  const changed = c.tool_changes ?? [];
  const toolNote = changed.length
    ? h(
        "p",
        { class: "reason waiting", "data-tool-changes": changed.length },
        `${changed.length === 1 ? "1 tool" : `${changed.length} tools`} changed since approved: `,
        changed.map((change) => change.name).join(", "),
        ". ",
        h(
          "button",
          { type: "button", class: "button small", "data-focus-key": "review", onclick: () => openToolsOf(c.id) },
          "Review changes",
          hidden(` of ${name}`),
        ),
      )
    : null;

  return h(
    "li",
    { class: "card", "data-id": c.id, "data-state": c.state, "aria-labelledby": titleId },
    h(
      "div",
      { class: "card-head" },
      h("h2", { id: titleId, tabindex: "-1", "data-focus-fallback": true }, name),
      h(
        "span",
        { class: `state state-${c.state}`, "data-state-label": true },
        h("span", { class: "visually-hidden" }, "State: "),
        STATE_LABELS[c.state] ?? c.state,
      ),
    ),
    h("p", { class: "url" }, c.url),
    c.metadata && c.metadata.description ? h("p", { class: "muted" }, c.metadata.description) : null,
    note,
    toolNote,
    facts([
      ["Headers", c.header_names && c.header_names.length ? `${c.header_names.join(", ")} (values hidden)` : null],
      ["Preset", c.preset],
      ["Updated", when(c.updated_at)],
    ]),
    copyField("Proxy URL", proxyUrlOf(c.id)),
    h("div", { class: "actions" }, actions),
  );
}

/** The tools dialog (tools.js) of a connector; what it saves updates the card. */
function openToolsOf(id) {
  const c = connectors.get(id);
  if (!c) return;
  openTools(c, nameOf(c), (result) => {
    if (newer(result, connectors.get(id))) upsert(result);
  });
}

// ---- Create ----------------------------------------------------------------------------------------------

/** The URL, name and description fields of the add and edit dialogs, with the API's limits (connectors/model.ts). */
function connectorInputs(ids, urlAttributes) {
  return {
    url: h("input", {
      id: ids.url,
      name: "url",
      type: "url",
      required: true,
      maxlength: "2048",
      autocomplete: "off",
      spellcheck: "false",
      ...urlAttributes,
    }),
    name: h("input", { id: ids.name, name: "name", maxlength: "200", autocomplete: "off" }),
    description: h("input", { id: ids.description, name: "description", maxlength: "2000", autocomplete: "off" }),
  };
}

async function openCreate() {
  if (!presets) {
    try {
      presets = (await api("GET", "/api/v1/connectors/presets")).items;
    } catch (error) {
      presets = [];
      announce(`The presets could not be loaded: ${error.message}`);
    }
  }
  const ids = {
    preset: uid("preset"),
    presetHint: uid("preset-hint"),
    url: uid("url"),
    name: uid("name"),
    description: uid("description"),
  };
  const select = h(
    "select",
    { id: ids.preset, name: "preset", "aria-describedby": ids.presetHint },
    h("option", { value: "" }, "A server of my own (enter its URL)"),
    presets.map((p, i) => h("option", { value: String(i) }, (p.metadata && p.metadata.name) || p.url)),
  );
  const hint = h("p", { class: "hint", id: ids.presetHint }, "Presets fill in the URL, a name and, for some, the OAuth client.");
  const { url, name, description } = connectorInputs(ids, { placeholder: "https://mcp.example.com/mcp" });
  let chosen = null;
  select.addEventListener("change", () => {
    chosen = select.value === "" ? null : presets[Number(select.value)];
    url.value = chosen ? chosen.url : "";
    name.value = (chosen && chosen.metadata && chosen.metadata.name) || "";
    description.value = (chosen && chosen.metadata && chosen.metadata.description) || "";
    hint.textContent = chosen
      ? (chosen.metadata && chosen.metadata.description) || chosen.url
      : "Presets fill in the URL, a name and, for some, the OAuth client.";
  });
  const dialog = formDialog({
    title: "Add a connector",
    submitLabel: "Add connector",
    fields: [
      h("div", { class: "field" }, h("label", { for: ids.preset }, "Start from"), select, hint),
      h("div", { class: "field" }, h("label", { for: ids.url }, "MCP server URL"), url),
      h("div", { class: "field" }, h("label", { for: ids.name }, "Name (optional)"), name),
      h("div", { class: "field" }, h("label", { for: ids.description }, "Description (optional)"), description),
    ],
    submit: () => {
      const body = { url: url.value.trim() };
      if (!body.url) throw new Error("Enter the MCP server's URL, or choose a preset.");
      const metadata = {};
      if (name.value.trim()) metadata.name = name.value.trim();
      if (description.value.trim()) metadata.description = description.value.trim();
      // Unchanged preset metadata is left to the preset (it may carry more than a name and description).
      const presetMetadata = (chosen && chosen.metadata) || {};
      const changed =
        (metadata.name ?? "") !== (presetMetadata.name ?? "") ||
        (metadata.description ?? "") !== (presetMetadata.description ?? "");
      if (Object.keys(metadata).length && (!chosen || changed || chosen.url !== body.url)) body.metadata = metadata;
      return async (close) => {
        const created = await api("POST", "/api/v1/connectors", body);
        const row = upsert(created);
        announce(`Added ${nameOf(created)}. Connect it to start using it.`);
        dialog.returnFocusTo = row.querySelector('[data-focus-key="connect"]');
        close();
      };
    },
  });
}

// ---- Connect ---------------------------------------------------------------------------------------------

/**
 * A window for the authorization server's pages, opened at once (while the click still counts as the person's, so no
 * popup blocker stops it) and pointed at the authorization URL when the API has given it. It is cut off from the
 * console (`opener = null`): the authorization server's pages cannot reach back into it.
 */
function openAuthWindow() {
  const w = window.open("", "_blank", "popup,width=600,height=720");
  if (!w) return null;
  try {
    w.document.title = "Opening the sign-in page…";
    w.document.body.textContent = "Opening the sign-in page…";
  } catch {
    // Nothing to say then.
  }
  try {
    w.opener = null;
  } catch {
    // Already without one.
  }
  return w;
}

function sendAuthWindow(id, w, url) {
  if (!w || w.closed) {
    announce("The sign-in window was blocked: use the sign-in link on the connector's card.");
    return;
  }
  w.location.replace(url);
  const previous = authWindows.get(id);
  if (previous && previous !== w) closeWhenPossible(previous);
  authWindows.set(id, w);
}

/**
 * The callback page is this origin's: the window can be closed once it shows that page (the event may arrive while it
 * still shows the authorization server's), so look again for a while.
 */
function closeWhenPossible(w) {
  let tries = 0;
  const attempt = () => {
    if (w.closed) return;
    let ours = false;
    try {
      ours = w.location.origin === location.origin;
    } catch {
      // Another origin's page: not ours to close yet.
    }
    if (ours) w.close();
    else if (++tries < 60) setTimeout(attempt, 250);
  };
  attempt();
}

function closeAuthWindow(id) {
  const w = authWindows.get(id);
  if (!w) return;
  authWindows.delete(id);
  closeWhenPossible(w);
}

function reopenAuthorization(id) {
  const c = connectors.get(id);
  if (!c || !c.auth_request) return;
  sendAuthWindow(id, openAuthWindow(), c.auth_request.authorization_url);
}

function openConnect(id) {
  const c = connectors.get(id);
  if (!c) return;
  const ids = { oauth: uid("method"), headers: uid("method"), note: uid("headers-note") };
  const useHeaders = c.header_names && c.header_names.length > 0;
  const oauth = h("input", { type: "radio", name: "method", value: "oauth", id: ids.oauth, checked: !useHeaders });
  const withHeaders = h("input", { type: "radio", name: "method", value: "headers", id: ids.headers, checked: useHeaders });
  const rows = h("div", { class: "header-rows" });
  const addRow = (headerName = "") => {
    const n = uid("header-name");
    const v = uid("header-value");
    const row = h(
      "div",
      { class: "header-row" },
      h(
        "div",
        { class: "field" },
        h("label", { for: n }, "Header"),
        h("input", { id: n, name: "header-name", value: headerName, autocomplete: "off", spellcheck: "false", maxlength: "256" }),
      ),
      // A password field: the value is a secret; it is sent once, stored sealed and never shown again.
      h(
        "div",
        { class: "field" },
        h("label", { for: v }, "Value"),
        h("input", {
          id: v,
          name: "header-value",
          type: "password",
          autocomplete: "off",
          spellcheck: "false",
          maxlength: "8192",
        }),
      ),
      h(
        "button",
        {
          type: "button",
          class: "button small",
          onclick: () => {
            row.remove();
            if (!rows.children.length) addRow();
            rows.querySelector("input").focus();
          },
        },
        "Remove",
        hidden(" this header"),
      ),
    );
    rows.append(row);
    return row;
  };
  for (const headerName of useHeaders ? c.header_names : ["Authorization"]) addRow(headerName);
  const headerSection = h(
    "div",
    { hidden: !useHeaders },
    h(
      "p",
      { class: "hint", id: ids.note },
      "Sent with every request to the server. Stored sealed; the values are never shown again (only the names).",
    ),
    rows,
    h(
      "button",
      {
        type: "button",
        class: "button small",
        onclick: () => addRow().querySelector("input").focus(),
      },
      "Add a header",
    ),
  );
  const syncMethod = () => (headerSection.hidden = !withHeaders.checked);
  oauth.addEventListener("change", syncMethod);
  withHeaders.addEventListener("change", syncMethod);
  const dialog = formDialog({
    title: `Connect ${nameOf(c)}`,
    fallbackFocus: () => list().querySelector(`li[data-id="${CSS.escape(id)}"] h2`),
    submitLabel: "Connect",
    fields: [
      h(
        "fieldset",
        {},
        h("legend", {}, "How does this server take credentials?"),
        h(
          "label",
          { class: "choice", for: ids.oauth },
          oauth,
          h("span", {}, "Sign in with the server (OAuth) — or none, for an open server"),
        ),
        h("label", { class: "choice", for: ids.headers }, withHeaders, h("span", {}, "Headers, such as an API key")),
      ),
      headerSection,
    ],
    submit: () => {
      let body = {};
      if (withHeaders.checked) {
        const headers = {};
        for (const row of rows.children) {
          const [nameInput, valueInput] = row.querySelectorAll("input");
          const headerName = nameInput.value.trim();
          if (!headerName && !valueInput.value) continue;
          if (!headerName) throw new Error("Every header needs a name.");
          headers[headerName] = valueInput.value;
        }
        if (!Object.keys(headers).length) throw new Error("Enter at least one header, or choose the other way.");
        body = { headers };
      }
      return async (close) => {
        const result = await api("POST", `/api/v1/connectors/${encodeURIComponent(id)}/connect`, body);
        const known = connectors.get(id);
        if (newer(result, known)) upsert(result);
        // A window only when the server wants a sign-in: an open server connects with no popup at all. Opened after
        // the answer, still within the click's user activation (HTML §6.4.3, transient activation) in most browsers;
        // when a blocker stops it, the card shows the link.
        if (result.state === "auth_required" && result.auth_request) {
          sendAuthWindow(id, openAuthWindow(), result.auth_request.authorization_url);
          announce(
            `Sign in to ${nameOf(result)} in the new window (or with the card's sign-in link). The connector turns connected when you are done.`,
          );
        } else announce(`${nameOf(result)} is ${STATE_LABELS[result.state].toLowerCase()}.`);
        close();
      };
    },
  });
  return dialog;
}

// ---- Edit: URL and metadata ---------------------------------------------------------------------------------

function openEdit(id) {
  const c = connectors.get(id);
  if (!c) return;
  const ids = { url: uid("url"), urlHint: uid("url-hint"), name: uid("name"), description: uid("description") };
  const { url, name, description } = connectorInputs(ids, { "aria-describedby": ids.urlHint });
  url.value = c.url;
  name.value = (c.metadata && c.metadata.name) || "";
  description.value = (c.metadata && c.metadata.description) || "";
  const dialog = formDialog({
    title: `Edit ${nameOf(c)}`,
    fallbackFocus: () => list().querySelector(`li[data-id="${CSS.escape(id)}"] h2`),
    submitLabel: "Save",
    fields: [
      h(
        "div",
        { class: "field" },
        h("label", { for: ids.url }, "MCP server URL"),
        url,
        h(
          "p",
          { class: "hint", id: ids.urlHint },
          c.state === "created"
            ? "Fix the URL before you connect."
            : "A new URL disconnects the connector and forgets its credentials: connect it again afterwards.",
        ),
      ),
      h("div", { class: "field" }, h("label", { for: ids.name }, "Name"), name),
      h("div", { class: "field" }, h("label", { for: ids.description }, "Description"), description),
    ],
    submit: () => {
      const body = {};
      const newUrl = url.value.trim();
      if (!newUrl) throw new Error("Enter the MCP server's URL.");
      if (newUrl !== c.url) body.url = newUrl;
      const metadata = {};
      if (name.value.trim() !== ((c.metadata && c.metadata.name) || "")) metadata.name = name.value.trim();
      if (description.value.trim() !== ((c.metadata && c.metadata.description) || ""))
        metadata.description = description.value.trim();
      if (Object.keys(metadata).length) body.metadata = metadata;
      return async (close) => {
        if (!Object.keys(body).length) return close();
        const result = await api("PATCH", `/api/v1/connectors/${encodeURIComponent(id)}`, body);
        const row = upsert(result);
        if (body.url && result.state !== "connected") {
          announce(`${nameOf(result)} now points at ${result.url}. Connect it to use it.`);
          dialog.returnFocusTo = row.querySelector('[data-focus-key="connect"], [data-focus-key="reauthorize"]');
        } else announce(`${nameOf(result)} was saved.`);
        close();
      };
    },
  });
}

// ---- Disconnect, delete ------------------------------------------------------------------------------------

async function disconnect(id) {
  const c = connectors.get(id);
  if (!c) return;
  const ok = await confirmAction({
    title: `Disconnect ${nameOf(c)}?`,
    message:
      "Its credentials are forgotten (an OAuth grant is revoked at the server). MCP clients using its proxy URL stop working until it is connected again.",
    confirmLabel: "Disconnect",
  });
  if (!ok) return;
  try {
    const result = await api("POST", `/api/v1/connectors/${encodeURIComponent(id)}/disconnect`);
    if (newer(result, connectors.get(id))) upsert(result);
    announce(`${nameOf(result)} is disconnected.`);
  } catch (error) {
    announce(`Could not disconnect ${nameOf(c)}: ${error.message}`);
  }
}

async function deleteConnector(id) {
  const c = connectors.get(id);
  if (!c) return;
  const ok = await confirmAction({
    title: `Delete ${nameOf(c)}?`,
    message:
      "The connector and its credentials are deleted (an OAuth grant is revoked at the server). MCP clients using its proxy URL stop working. This cannot be undone.",
    confirmLabel: "Delete",
  });
  if (!ok) return;
  try {
    await api("DELETE", `/api/v1/connectors/${encodeURIComponent(id)}`);
    fetches.set(id, (fetches.get(id) ?? 0) + 1);
    remove(id);
    announce(`${nameOf(c)} was deleted.`);
  } catch (error) {
    if (error.status === 404) remove(id);
    announce(`Could not delete ${nameOf(c)}: ${error.message}`);
  }
}
