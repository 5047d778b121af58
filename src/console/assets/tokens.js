// API tokens (created, shown once, revoked) and the grants MCP clients were given (revoked).
import { api, page } from "./api.js";
import { connectorName } from "./connectors.js";
import { announce, busy, confirmAction, copyField, h, hidden, openDialog, showError, when } from "./dom.js";

export function initTokens() {
  const form = document.getElementById("token-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const submit = form.querySelector("button[type=submit]");
    busy(submit, () => createToken(form));
  });
}

export async function showTokens() {
  await Promise.all([loadTokens(), loadGrants()]);
}

export function resetTokens() {
  document.getElementById("token-list").replaceChildren();
  document.getElementById("grant-list").replaceChildren();
  document.getElementById("token-form").reset();
}

async function loadTokens() {
  const listElement = document.getElementById("token-list");
  try {
    const { items } = await api("GET", "/api/v1/tokens");
    listElement.replaceChildren(...items.map(tokenRow));
    document.getElementById("tokens-empty").hidden = items.length > 0;
  } catch (error) {
    announce(`Could not load your tokens: ${error.message}`);
  }
}

function tokenRow(token) {
  return h(
    "li",
    { "data-id": token.id },
    h(
      "div",
      { class: "main" },
      h("p", { class: "name" }, token.name),
      h(
        "p",
        { class: "muted small" },
        "Created ",
        when(token.created_at),
        " · ",
        token.expires_at ? ["expires ", when(token.expires_at)] : "never expires",
      ),
    ),
    h(
      "button",
      { type: "button", class: "button small danger", "data-focus-key": "revoke", onclick: () => revokeToken(token) },
      "Revoke",
      hidden(` ${token.name}`),
    ),
  );
}

async function createToken(form) {
  const error = document.getElementById("token-error");
  showError(error, null);
  const name = form.elements.name.value.trim();
  const days = form.elements.expires_in_days.value.trim();
  if (!name) return showError(error, new Error("Say what the token is for."));
  const body = { name };
  if (days) {
    const n = Number(days);
    if (!Number.isInteger(n) || n < 1 || n > 3650)
      return showError(error, new Error("Expiry: a whole number of days from 1 to 3650, or empty for none."));
    body.expires_in_days = n;
  }
  let created;
  try {
    created = await api("POST", "/api/v1/tokens", body);
  } catch (e) {
    return showError(error, e);
  }
  form.reset();
  await loadTokens();
  showCreatedToken(created);
}

/** The token itself, once: copied from here or never seen again (only its digest is stored). */
function showCreatedToken(created) {
  openDialog({
    title: "Your new API token",
    initialFocus: "input[data-secret]",
    fallbackFocus: () => document.getElementById("token-name"),
    build: (close) =>
      h(
        "div",
        { class: "stack" },
        h(
          "p",
          {},
          h("strong", {}, "Copy it now: it will not be shown again. "),
          `“${created.name}” — send it as Authorization: Bearer <token>.`,
        ),
        h("div", { class: "secret-box" }, copyField("API token", created.token, { secret: true })),
        h("div", { class: "actions" }, h("button", { type: "button", class: "button primary", onclick: close }, "Done")),
      ),
  });
}

async function revokeToken(token) {
  const ok = await confirmAction({
    title: `Revoke “${token.name}”?`,
    message: "Programs using this token lose access at once. This cannot be undone.",
    confirmLabel: "Revoke",
  });
  if (!ok) return;
  try {
    await api("DELETE", `/api/v1/tokens/${encodeURIComponent(token.id)}`);
    announce(`Revoked “${token.name}”.`);
  } catch (error) {
    announce(`Could not revoke “${token.name}”: ${error.message}`);
  }
  await loadTokens();
  document.getElementById("token-list-title").focus();
}

/** Virtual servers' names by id, for their grants. */
let virtualServerNames = new Map();

async function loadGrants() {
  const listElement = document.getElementById("grant-list");
  try {
    const { items } = await api("GET", "/api/v1/grants");
    // A grant for a virtual server's MCP URL is named by the virtual server's name, when it is one of the first page's.
    if (items.some((grant) => grant.virtual_server_id)) {
      const servers = await page("/api/v1/virtual-servers").catch(() => ({ items: [] }));
      virtualServerNames = new Map(servers.items.map((s) => [s.id, s.name]));
    }
    listElement.replaceChildren(...items.map(grantRow));
    document.getElementById("grants-empty").hidden = items.length > 0;
  } catch (error) {
    announce(`Could not load the MCP clients' grants: ${error.message}`);
  }
}

function grantRow(grant) {
  return h(
    "li",
    { "data-id": grant.id },
    h(
      "div",
      { class: "main" },
      h("p", { class: "name mono" }, grant.client_id),
      h(
        "p",
        { class: "muted small" },
        grant.virtual_server_id
          ? `Virtual server ${virtualServerNames.get(grant.virtual_server_id) ?? grant.virtual_server_id}`
          : `Connector ${connectorName(grant.connector_id) ?? grant.connector_id}`,
        grant.scope ? ` · scope ${grant.scope}` : "",
      ),
      h(
        "p",
        { class: "muted small" },
        "Allowed ",
        when(grant.created_at),
        " · last used ",
        grant.last_used_at ? when(grant.last_used_at) : "never",
      ),
    ),
    h(
      "button",
      { type: "button", class: "button small danger", onclick: () => revokeGrant(grant) },
      "Revoke",
      hidden(` ${grant.client_id}`),
    ),
  );
}

async function revokeGrant(grant) {
  const ok = await confirmAction({
    title: "Revoke this client's access?",
    message: `${grant.client_id} can no longer use the ${grant.virtual_server_id ? "virtual server's MCP URL" : "connector's proxy URL"}; it would have to ask you again.`,
    confirmLabel: "Revoke",
  });
  if (!ok) return;
  try {
    await api("DELETE", `/api/v1/grants/${encodeURIComponent(grant.id)}`);
    announce("The client's access is revoked.");
  } catch (error) {
    announce(`Could not revoke: ${error.message}`);
  }
  await loadGrants();
  document.getElementById("grant-list-title").focus();
}
