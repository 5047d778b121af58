// The audit trail: what MCP clients sent through the proxy and the virtual servers, newest first — filtered by
// connector, virtual server, user (administrators), method, tool, outcome and time, in pages, and downloaded as CSV or
// NDJSON with the same filters (GET /api/v1/audit?format=…, docs/interface.md).
import { api, page } from "./api.js";
import { announce, busy, h, when } from "./dom.js";

const form = () => document.getElementById("audit-filters");
const rows = () => document.getElementById("audit-rows");
let nextCursor = null;
let admin = false;

export function initAudit() {
  form().addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form().querySelector("button[type=submit]"), () => load(null));
  });
  form().addEventListener("input", updateDownloads);
  document.getElementById("audit-more").addEventListener("click", (e) => busy(e.currentTarget, () => load(nextCursor)));
}

/** The view is shown: the choices (connectors, virtual servers, users for administrators), then the newest records. */
export async function showAudit(user) {
  admin = user.role === "admin";
  document.getElementById("audit-user-field").hidden = !admin;
  try {
    const [connectors, servers, users] = await Promise.all([
      all("/api/v1/connectors"),
      all("/api/v1/virtual-servers"),
      admin ? api("GET", "/api/v1/users").then((r) => r.items) : Promise.resolve([]),
    ]);
    fill("audit-connector", connectors, (c) => (c.metadata && c.metadata.name) || c.url);
    fill("audit-virtual", servers, (s) => s.name);
    fill("audit-user", users, (u) => u.username);
  } catch (error) {
    announce(`Could not load the filters' choices: ${error.message}`);
  }
  await load(null);
}

export function resetAudit() {
  rows().replaceChildren();
  form().reset();
  nextCursor = null;
}

/** Every page of a list (the filters offer every connector and virtual server). */
async function all(path) {
  const items = [];
  let cursor = null;
  do {
    const result = await page(path, cursor);
    items.push(...result.items);
    cursor = result.next_cursor;
  } while (cursor);
  return items;
}

function fill(id, items, label) {
  const select = document.getElementById(id);
  const chosen = select.value;
  select.replaceChildren(h("option", { value: "" }, "any"), ...items.map((i) => h("option", { value: i.id }, label(i))));
  select.value = chosen;
}

/** The filters as the API's query (empty fields left out; times from the browser's local time to ISO 8601). */
function query() {
  const data = new FormData(form());
  const q = new URLSearchParams();
  for (const [key, value] of data) {
    const text = String(value).trim();
    if (!text) continue;
    if (key === "since" || key === "until") {
      const at = new Date(text);
      if (!Number.isNaN(at.getTime())) q.set(key, at.toISOString());
    } else q.set(key, text);
  }
  return q;
}

function updateDownloads() {
  for (const format of ["csv", "ndjson"]) {
    const q = query();
    q.set("format", format);
    document.getElementById(`audit-download-${format}`).href = `/api/v1/audit?${q}`;
  }
}

async function load(cursor) {
  updateDownloads();
  const q = query();
  q.set("limit", "50");
  if (cursor) q.set("cursor", cursor);
  try {
    const result = await api("GET", `/api/v1/audit?${q}`);
    const lines = result.items.map(row);
    if (cursor) rows().append(...lines);
    else rows().replaceChildren(...lines);
    nextCursor = result.next_cursor;
    document.getElementById("audit-more").hidden = !nextCursor;
    document.getElementById("audit-empty").hidden = rows().children.length > 0;
  } catch (error) {
    announce(`Could not load the audit trail: ${error.message}`);
  }
}

const OUTCOMES = { result: "result", error: "JSON-RPC error", http: "HTTP", rate_limited: "rate limited" };

function row(r) {
  const outcome =
    r.outcome === "error" ? `error ${r.error_code}` : r.outcome === "http" ? `HTTP ${r.http_status}` : OUTCOMES[r.outcome];
  return h(
    "tr",
    { "data-id": r.id, "data-outcome": r.outcome },
    h("td", {}, when(r.at)),
    h("td", { class: "mono" }, r.method ?? "—"),
    h("td", { class: "mono" }, r.name ?? ""),
    h("td", {}, outcome),
    h("td", { class: "num" }, `${r.duration_ms} ms`),
    h("td", { class: "mono small" }, r.connector_id),
    h("td", { class: "mono small" }, r.virtual_server_id ?? ""),
    admin ? h("td", { class: "mono small" }, r.user_id) : null,
    h("td", { class: "small" }, r.credential ?? ""),
  );
}
