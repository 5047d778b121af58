// Small DOM helpers: elements built with text (never HTML strings), the status region, dialogs, copying.

/**
 * An element: `h("button", { class: "button", onclick: fn, "aria-label": "…" }, "text", child)`.
 * Strings become text nodes; null, undefined and false are skipped; arrays are flattened.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (key === "class") element.className = value;
    else if (key === "text") element.textContent = value;
    else if (key === "value") element.value = value;
    else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, String(value));
  }
  append(element, children);
  return element;
}

function append(parent, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Text for screen readers only, e.g. the connector a "Delete" button is about. */
export const hidden = (text) => h("span", { class: "visually-hidden" }, text);

let ids = 0;
/** A fresh id for label/aria wiring. */
export const uid = (prefix = "id") => `${prefix}-${++ids}`;

let toastTimer;
/** Says `message` in the polite live region (and shows it briefly for sighted users). */
export function announce(message) {
  const status = document.getElementById("status");
  const toast = document.getElementById("toast");
  // Cleared first, so the same message twice is announced twice.
  status.textContent = "";
  setTimeout(() => {
    status.textContent = message;
  }, 50);
  toast.textContent = message;
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    toast.hidden = true;
  }, 5000);
}

/** Marks a button busy while `work` runs (no double submits); resolves to what `work` gives. */
export async function busy(button, work) {
  if (!button) return work();
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

/** Shows `error` (an ApiError or any Error) in a form's alert paragraph. */
export function showError(paragraph, error) {
  paragraph.textContent = "";
  // Set after a tick, so that a screen reader announces it again when it is the same text.
  setTimeout(() => {
    paragraph.textContent = error ? error.message || String(error) : "";
  }, 20);
}

/**
 * A modal dialog: focus goes to its first field (or `initialFocus`), Escape and "Cancel" close it, and focus returns to
 * the element that opened it — or, if that one is gone (its row re-rendered), to `fallbackFocus()`.
 * `build(close)` returns the dialog's content. The dialog is removed from the page when it closes.
 */
export function openDialog({ title, build, initialFocus, fallbackFocus, wide = false }) {
  const opener = document.activeElement;
  const titleId = uid("dialog-title");
  const dialog = h("dialog", { "aria-labelledby": titleId, class: wide ? "wide" : undefined });
  const close = () => dialog.close();
  const body = h("div", { class: "dialog-body" }, h("h2", { id: titleId }, title), build(close, dialog));
  dialog.append(body);
  dialog.addEventListener("close", () => {
    dialog.remove();
    // `dialog.returnFocusTo`: where the work done in the dialog wants focus to go instead (a new row's button).
    const back = stillThere(dialog.returnFocusTo ?? opener) || (fallbackFocus && fallbackFocus());
    if (back && typeof back.focus === "function") back.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
  const first =
    (initialFocus && dialog.querySelector(initialFocus)) ||
    dialog.querySelector("input:not([type=hidden]):not([disabled]), select, textarea, button:not([disabled])");
  if (first) first.focus();
  return dialog;
}

/**
 * A dialog around one form (openDialog's options, plus): `fields`, then an alert line for errors, then the submit
 * button (`submitLabel`) and Cancel. On submit, `submit()` runs at once, inside the click — its checks, and what must
 * happen in the person's gesture (opening a window) — and throws an Error to show, or returns the work that follows:
 * `(close) => Promise`, run while the button is busy; what it throws is shown in the alert line too.
 */
export function formDialog({ submitLabel, fields, submit, ...options }) {
  return openDialog({
    ...options,
    build: (close) => {
      const error = h("p", { class: "form-error", role: "alert" });
      const button = h("button", { type: "submit", class: "button primary" }, submitLabel);
      const onsubmit = (event) => {
        event.preventDefault();
        let work;
        try {
          work = submit();
        } catch (e) {
          return showError(error, e);
        }
        return busy(button, async () => {
          try {
            await work(close);
          } catch (e) {
            showError(error, e);
          }
        });
      };
      const cancel = h("button", { type: "button", class: "button", onclick: close }, "Cancel");
      return h(
        "form",
        { class: "stack", novalidate: true, onsubmit },
        fields,
        error,
        h("div", { class: "actions" }, button, cancel),
      );
    },
  });
}

/**
 * `element`, or — when a live update re-rendered its row meanwhile — the same control (data-focus-key) in the row of
 * the same id (data-id) now on the page.
 */
function stillThere(element) {
  if (!element || element.isConnected) return element;
  const key = element.getAttribute && element.getAttribute("data-focus-key");
  const row = element.closest && element.closest("[data-id]");
  if (!key || !row) return null;
  return document.querySelector(`[data-id="${CSS.escape(row.getAttribute("data-id"))}"] [data-focus-key="${CSS.escape(key)}"]`);
}

/** Asks before something that cannot be undone; resolves true when confirmed. */
export function confirmAction({ title, message, confirmLabel, danger = true }) {
  return new Promise((resolve) => {
    let answer = false;
    const dialog = openDialog({
      title,
      initialFocus: "button[data-cancel]",
      build: (close) =>
        h(
          "div",
          {},
          h("p", {}, message),
          h(
            "div",
            { class: "actions" },
            h(
              "button",
              {
                type: "button",
                class: `button ${danger ? "danger-solid" : "primary"}`,
                onclick: () => ((answer = true), close()),
              },
              confirmLabel,
            ),
            h("button", { type: "button", class: "button", "data-cancel": true, onclick: close }, "Cancel"),
          ),
        ),
    });
    dialog.addEventListener("close", () => resolve(answer));
  });
}

/** Copies `text` to the clipboard (or, where the Clipboard API is unavailable, through a selected field). */
export async function copyText(text, field) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      announce("Copied to the clipboard.");
      return;
    }
  } catch {
    // Fall through to the selection.
  }
  if (field) {
    field.focus();
    field.select();
    const copied = document.execCommand && document.execCommand("copy");
    announce(copied ? "Copied to the clipboard." : "Selected: press Ctrl+C (or ⌘C) to copy.");
  }
}

/** A read-only field with a label and a Copy button. */
export function copyField(label, value, { secret = false } = {}) {
  const id = uid("copy");
  const input = h("input", {
    id,
    readonly: true,
    value,
    spellcheck: "false",
    autocomplete: "off",
    "data-secret": secret || undefined,
  });
  input.addEventListener("focus", () => input.select());
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    h(
      "div",
      { class: "copy-row" },
      input,
      h(
        "button",
        { type: "button", class: "button small", onclick: () => copyText(value, input) },
        "Copy",
        hidden(` ${label.toLowerCase()}`),
      ),
    ),
  );
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
/** A date the API gave (ISO 8601) for people, inside a <time>. */
export function when(iso) {
  if (!iso) return "never";
  const date = new Date(iso);
  return h("time", { datetime: iso }, Number.isNaN(date.getTime()) ? iso : dateFormat.format(date));
}

/** Definition list of [term, value] pairs (values may be nodes); pairs with an empty value are left out. */
export function facts(pairs) {
  return h(
    "dl",
    { class: "facts" },
    pairs
      .filter(([, value]) => value !== undefined && value !== null && value !== "")
      .map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]),
  );
}

/** Replaces a list's items, keeping focus on the "same" control (matched by data-focus-key) when it still exists. */
export function replaceKeepingFocus(oldNode, newNode) {
  const active = document.activeElement;
  const key = active && oldNode.contains(active) ? active.getAttribute("data-focus-key") : null;
  const hadFocus = active && oldNode.contains(active);
  oldNode.replaceWith(newNode);
  if (!hadFocus) return;
  const same = key && newNode.querySelector(`[data-focus-key="${CSS.escape(key)}"]`);
  (same || newNode.querySelector("[data-focus-fallback]") || newNode).focus();
}
