// A connector's tools: the server's tools as it lists them (GET …/tools, before the policy), each with its policy —
// shown to clients or not, the name and description clients get — and the pinning mode, saved as the connector's
// tool_policy (PATCH); and the tools that changed since they were approved, as a diff (GET …/tools/changes), approved
// one by one or all (POST …/tools/approve). The connector's rate limits are edited here too (saved with the policy as
// its rate_limits): its requests per minute, and each tool's calls per minute by the name clients call it.
import { api } from "./api.js";
import { changedParts, definitionParts } from "./tool-diff.js";
import { announce, busy, h, hidden, openDialog, showError, uid } from "./dom.js";

const PIN_MODES = [
  ["", "Off"],
  ["record", "Record changes (changed tools stay usable)"],
  ["strict", "Strict (changed and new tools are hidden until approved)"],
];

const pathOf = (id, rest = "") => `/api/v1/connectors/${encodeURIComponent(id)}${rest}`;

/**
 * Opens the tools of connector `c` (named `name`). `onSaved(connector)` gets the connector as the API answered a save
 * or an approval, to update its card.
 */
export function openTools(c, name, onSaved) {
  let connector = c;
  const status = h("p", { class: "muted", role: "status", "data-tools-status": true }, "Loading the server's tools…");
  const changes = h("section", { "data-changes": true, hidden: true });
  const form = h("form", { class: "stack", novalidate: true, hidden: true });
  const dialog = openDialog({
    title: `Tools of ${name}`,
    wide: true,
    build: (close) =>
      h(
        "div",
        { class: "stack" },
        status,
        changes,
        form,
        h("div", { class: "actions" }, h("button", { type: "button", class: "button", onclick: close }, "Close")),
      ),
  });
  const saved = (result) => {
    connector = result;
    onSaved(result);
  };
  load();

  /** Each part as soon as it comes: the changes need not wait for the server's listing. */
  function load() {
    api("GET", pathOf(c.id, "/tools/changes"))
      .then((changed) => dialog.isConnected && renderChanges(changed.items))
      .catch((error) => announce(`The changed tools could not be loaded: ${error.message}`));
    api("GET", pathOf(c.id, "/tools"))
      .then(
        (listed) => {
          status.textContent = `${listed.items.length} tools, as the server lists them. Clients see them as the policy below says.`;
          return listed.items;
        },
        (error) => {
          status.textContent = `The server's tools could not be listed: ${error.message} Only the tools the policy names are shown.`;
          return [];
        },
      )
      .then((tools) => dialog.isConnected && renderPolicy(tools));
  }

  // ---- Changed tools -----------------------------------------------------------------------------------------

  function renderChanges(items) {
    changes.hidden = items.length === 0;
    if (items.length === 0) return changes.replaceChildren();
    const titleId = uid("changes-title");
    const approve = (names, button) =>
      busy(button, async () => {
        try {
          const result = await api("POST", pathOf(c.id, "/tools/approve"), names ? { names } : undefined);
          saved(result);
          // The rows' "needs approval" notes of what is approved now go (the rows keep any unsaved edits).
          const still = new Set(result.tool_changes.map((change) => change.name));
          for (const note of form.querySelectorAll("[data-pending]"))
            if (!still.has(note.closest("[data-tool]").dataset.tool)) note.remove();
          announce(names ? `Approved ${names.join(", ")}.` : "Approved every changed tool.");
          renderChanges((await api("GET", pathOf(c.id, "/tools/changes"))).items);
          const heading = changes.querySelector("h3") ?? form.querySelector("legend");
          if (heading) heading.focus();
        } catch (error) {
          announce(`Could not approve: ${error.message}`);
        }
      });
    changes.setAttribute("aria-labelledby", titleId);
    // Native replaceChildren takes nodes only: h() drops the null and flattens the list.
    changes.replaceChildren(
      h(
        "div",
        {},
        h("h3", { id: titleId, tabindex: "-1" }, `Changed since approved (${items.length})`),
        h(
          "p",
          { class: "hint" },
          connector.tool_policy && connector.tool_policy.pin === "strict"
            ? "Strict pinning hides these tools from clients until you approve them."
            : "These tools are still listed and callable: pinning only records the change.",
        ),
        items.length > 1
          ? h(
              "button",
              { type: "button", class: "button small", onclick: (e) => approve(undefined, e.currentTarget) },
              "Approve all",
            )
          : null,
        items.map((item) =>
          h(
            "article",
            { class: "tool-change", "data-change": item.name },
            h(
              "h4",
              {},
              item.name,
              " ",
              h("span", { class: "state" }, item.change === "added" ? "New since the first listing" : "Changed"),
            ),
            diffOf(item),
            h(
              "button",
              { type: "button", class: "button small primary", onclick: (e) => approve([item.name], e.currentTarget) },
              "Approve",
              hidden(` ${item.name}`),
            ),
          ),
        ),
      ),
    );
  }

  // ---- The policy ----------------------------------------------------------------------------------------------

  function renderPolicy(tools) {
    const policy = connector.tool_policy ?? {};
    const allowMode = Array.isArray(policy.allow);
    const listed = new Map(tools.map((tool) => [tool.name, tool]));
    // Tools the policy names that the server does not list now keep their entries.
    const named = [
      ...(policy.allow ?? []),
      ...(policy.deny ?? []),
      ...Object.keys(policy.rename ?? {}),
      ...Object.keys(policy.descriptions ?? {}),
    ];
    const names = [...listed.keys(), ...new Set(named.filter((n) => !listed.has(n)))];
    const pending = new Map((connector.tool_changes ?? []).map((change) => [change.name, change.change]));
    const pinId = uid("pin");
    const pin = h(
      "select",
      { id: pinId, name: "pin", "data-field": "body.tool_policy.pin" },
      PIN_MODES.map(([value, label]) => h("option", { value }, label)),
    );
    pin.value = policy.pin ?? "";
    const limits = connector.rate_limits ?? {};
    const rows = names.map((toolName) =>
      row(toolName, listed.get(toolName), policy, allowMode, pending.get(toolName), limits.tools ?? {}),
    );
    // Limits of tools no row names (a name clients call that is no server tool's now) are kept as they are.
    const rowKeys = new Set(rows.map((r) => r.limitKey));
    const otherLimits = Object.entries(limits.tools ?? {}).filter(([key]) => !rowKeys.has(key));
    const perMinuteId = uid("per-minute");
    const perMinute = perMinuteInput(perMinuteId, limits.requests_per_minute, "body.rate_limits.requests_per_minute");
    const error = h("p", { class: "form-error", role: "alert" });
    const save = h("button", { type: "submit", class: "button primary" }, "Save");
    form.hidden = false;
    form.replaceChildren(
      h(
        "div",
        { class: "field" },
        h("label", { for: pinId }, "Pinning"),
        pin,
        fieldError(pin),
        h("p", { class: "hint" }, "Pinning remembers each tool's definition and tells you when the server changes it."),
      ),
      h(
        "div",
        { class: "field" },
        h("label", { for: perMinuteId }, "Requests per minute"),
        perMinute,
        fieldError(perMinute),
        h(
          "p",
          { class: "hint" },
          "Every MCP request to this connector, from all its clients together. Empty: no limit of its own (each user's own limit still applies).",
        ),
      ),
      h(
        "fieldset",
        {},
        h("legend", { tabindex: "-1" }, allowMode ? "Tools (only those shown are allowed)" : "Tools"),
        rows.length
          ? h(
              "div",
              { class: "tool-rows" },
              rows.map((r) => r.element),
            )
          : h("p", { class: "muted" }, "No tools."),
      ),
      error,
      h("div", { class: "actions" }, save),
    );
    form.onsubmit = (event) => {
      event.preventDefault();
      const body = {
        tool_policy: policyOf(rows, pin.value, allowMode),
        rate_limits: rateLimitsOf(rows, perMinute.value, otherLimits),
      };
      // A limit's errors come back under the name it was sent as (a rename in this save moves it).
      for (const r of rows) r.limit.dataset.field = `body.rate_limits.tools.${calledAs(r)}`;
      busy(save, async () => {
        for (const element of form.querySelectorAll("[aria-invalid]")) clearError(element);
        showError(error, null);
        try {
          const result = await api("PATCH", pathOf(c.id), body);
          saved(result);
          announce(`The tool policy and rate limits of ${name} were saved.`);
        } catch (e) {
          showError(error, e);
          markFields(form, e, body);
        }
      });
    };
  }

  return dialog;
}

/** One tool's row: shown to clients, the name and description they get, its calls per minute. */
function row(toolName, tool, policy, allowMode, pendingChange, toolLimits) {
  const shown = allowMode ? policy.allow.includes(toolName) : !(policy.deny ?? []).includes(toolName);
  const ids = { shown: uid("shown"), rename: uid("rename"), description: uid("description"), limit: uid("limit") };
  // A tool's limit is kept under the name clients call it (after a rename), as the proxy counts it.
  const limitKey = (policy.rename ?? {})[toolName] ?? toolName;
  const limit = perMinuteInput(ids.limit, toolLimits[limitKey], `body.rate_limits.tools.${limitKey}`);
  const toggle = h("input", { type: "checkbox", id: ids.shown, checked: shown, "data-shown": toolName });
  const rename = h("input", {
    id: ids.rename,
    value: (policy.rename ?? {})[toolName] ?? "",
    placeholder: toolName,
    autocomplete: "off",
    spellcheck: "false",
    "data-field": `body.tool_policy.rename.${toolName}`,
  });
  // A textarea: a server's description often has several lines, which an input's placeholder would run together.
  const description = h("textarea", {
    rows: 2,
    id: ids.description,
    value: (policy.descriptions ?? {})[toolName] ?? "",
    placeholder: tool && typeof tool.description === "string" ? tool.description : "",
    autocomplete: "off",
    "data-field": `body.tool_policy.descriptions.${toolName}`,
  });
  const note = !tool
    ? "Not listed by the server now"
    : pendingChange
      ? pendingChange === "added"
        ? "New: needs approval"
        : "Changed: needs approval"
      : null;
  const element = h(
    "div",
    { class: "tool-row", "data-tool": toolName },
    h(
      "div",
      { class: "tool-name" },
      h("strong", {}, toolName),
      note ? h("span", { class: "muted", "data-pending": pendingChange ? "" : undefined }, ` (${note})`) : null,
      h("label", { class: "choice", for: ids.shown }, toggle, h("span", {}, "Shown to clients", hidden(`: ${toolName}`))),
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: ids.rename }, "Name clients see", hidden(` for ${toolName}`)),
      rename,
      fieldError(rename),
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: ids.description }, "Description clients read", hidden(` for ${toolName}`)),
      description,
      fieldError(description),
    ),
    h(
      "div",
      { class: "field narrow" },
      h("label", { for: ids.limit }, "Calls per minute", hidden(` of ${toolName}`)),
      limit,
      fieldError(limit),
    ),
  );
  return { name: toolName, toggle, rename, description, limit, limitKey, element };
}

/** The name clients will call a row's tool by once the form is saved: its new name, or its own. */
const calledAs = (r) => r.rename.value.trim() || r.name;

/** A field for a limit per minute: empty is no limit; the API checks the range (and says so at the field). */
function perMinuteInput(id, value, field) {
  return h("input", {
    id,
    type: "number",
    inputmode: "numeric",
    min: 1,
    step: 1,
    value: value === undefined ? "" : String(value),
    placeholder: "No limit",
    autocomplete: "off",
    "data-field": field,
  });
}

/**
 * The rate limits the fields say, null when they say none. A value that is not a whole number goes as written, so the
 * API's 422 says what is wrong at its field rather than the page guessing.
 */
function rateLimitsOf(rows, perMinute, otherLimits) {
  const number = (text) => (/^\d+$/.test(text) ? Number(text) : text);
  const limits = {};
  if (perMinute.trim()) limits.requests_per_minute = number(perMinute.trim());
  const tools = Object.fromEntries(otherLimits);
  for (const r of rows) {
    const text = r.limit.value.trim();
    // The limit follows the tool's name as it will be after this save.
    if (text) tools[calledAs(r)] = number(text);
  }
  if (Object.keys(tools).length) limits.tools = tools;
  return Object.keys(limits).length ? limits : null;
}

/** The policy the rows say; null when it says nothing (no policy: the proxy then streams bodies unread). */
function policyOf(rows, pin, allowMode) {
  const policy = {};
  if (allowMode) policy.allow = rows.filter((r) => r.toggle.checked).map((r) => r.name);
  else {
    const deny = rows.filter((r) => !r.toggle.checked).map((r) => r.name);
    if (deny.length) policy.deny = deny;
  }
  const rename = {};
  const descriptions = {};
  for (const r of rows) {
    const newName = r.rename.value.trim();
    if (newName && newName !== r.name) rename[r.name] = newName;
    const text = r.description.value.trim();
    if (text) descriptions[r.name] = text;
  }
  if (Object.keys(rename).length) policy.rename = rename;
  if (Object.keys(descriptions).length) policy.descriptions = descriptions;
  if (pin) policy.pin = pin;
  return Object.keys(policy).length ? policy : null;
}

/** The paragraph under a control where its error goes, tied to it for screen readers. */
function fieldError(control) {
  const id = uid("field-error");
  control.setAttribute("aria-describedby", id);
  return h("p", { class: "field-error", id, "data-error-for": control.id });
}

function clearError(control) {
  control.removeAttribute("aria-invalid");
  const paragraph = document.querySelector(`[data-error-for="${CSS.escape(control.id)}"]`);
  if (paragraph) paragraph.textContent = "";
}

/**
 * The problem's field errors at their controls: `body.tool_policy.rename.<tool>` and `…descriptions.<tool>` at that
 * tool's field, `…pin` at the select, `…allow.<n>`/`…deny.<n>` at the n-th tool of the list that was sent;
 * `body.rate_limits.requests_per_minute` and `…tools.<name>` at their limits.
 */
function markFields(form, error, sent) {
  const errors = (error.problem && Array.isArray(error.problem.errors) && error.problem.errors) || [];
  let first = null;
  for (const { field, detail } of errors) {
    const list = /^body\.tool_policy\.(allow|deny)\.(\d+)$/.exec(field ?? "");
    const policy = sent.tool_policy;
    const toolName = list && policy && policy[list[1]] ? policy[list[1]][Number(list[2])] : undefined;
    const control = toolName
      ? form.querySelector(`[data-shown="${CSS.escape(toolName)}"]`)
      : [...form.querySelectorAll("[data-field]")].find((element) => element.dataset.field === field);
    if (!control) continue;
    control.setAttribute("aria-invalid", "true");
    const paragraph = form.querySelector(`[data-error-for="${CSS.escape(control.id)}"]`);
    if (paragraph) paragraph.textContent = detail;
    first ??= control;
  }
  if (first) first.focus();
}

/** A changed tool's parts as line diffs (removed lines marked "−", added "+"); a new tool's definition as it is. */
function diffOf(item) {
  if (!item.current) return h("p", { class: "muted" }, "The definition was recorded before definitions were kept.");
  if (!item.approved && item.change === "changed")
    return h("p", { class: "muted" }, "The approved definition was recorded before definitions were kept.");
  const parts = item.approved
    ? changedParts(item.approved, item.current)
    : definitionParts(item.current)
        .filter(([, text]) => text !== "")
        .map(([label, text]) => ({ label, lines: text.split("\n").map((line) => ({ op: " ", text: line })) }));
  return parts.map((part) =>
    h(
      "div",
      { class: "diff-part", "data-part": part.label },
      h("h5", {}, part.label),
      h(
        "pre",
        { class: "code diff" },
        part.lines.map((line) =>
          h(
            "span",
            { class: line.op === "-" ? "del" : line.op === "+" ? "ins" : "same", "data-op": line.op },
            `${line.op === "-" ? "− " : line.op === "+" ? "+ " : "  "}${line.text}\n`,
          ),
        ),
      ),
    ),
  );
}
