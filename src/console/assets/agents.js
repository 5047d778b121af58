// A2A agent providers: their cards' URLs; administrators register, refresh and remove them.
import { api } from "./api.js";
import { announce, busy, confirmAction, copyField, facts, formDialog, h, hidden, uid, when } from "./dom.js";

let isAdmin = false;

export function initAgents() {
  document.getElementById("add-agent").addEventListener("click", openRegister);
}

export async function showAgents(admin) {
  isAdmin = admin;
  const listElement = document.getElementById("agent-list");
  try {
    const { items } = await api("GET", "/api/v1/providers");
    listElement.replaceChildren(...items.map(agentCard));
    document.getElementById("agents-empty").hidden = items.length > 0;
  } catch (error) {
    announce(`Could not load the agents: ${error.message}`);
  }
}

export function resetAgents() {
  document.getElementById("agent-list").replaceChildren();
}

function agentCard(p) {
  const titleId = uid("agent");
  const actions = [];
  if (isAdmin && p.agent_card_url) {
    actions.push(
      h(
        "button",
        {
          type: "button",
          class: "button small",
          "data-focus-key": "refresh",
          onclick: (e) => busy(e.currentTarget, () => refresh(p)),
        },
        "Fetch the card again",
        hidden(` of ${p.name}`),
      ),
    );
  }
  if (isAdmin)
    actions.push(
      h(
        "button",
        { type: "button", class: "button small danger", "data-focus-key": "remove", onclick: () => removeAgent(p) },
        "Remove",
        hidden(` ${p.name}`),
      ),
    );
  return h(
    "li",
    { class: "card", "data-id": p.id, "aria-labelledby": titleId },
    h(
      "div",
      { class: "card-head" },
      h("h2", { id: titleId, tabindex: "-1" }, p.name),
      p.refresh_error ? h("span", { class: "tag bad" }, "Refresh failed") : null,
    ),
    p.description ? h("p", { class: "muted" }, p.description) : null,
    p.refresh_error ? h("p", { class: "reason" }, h("strong", {}, "Last refresh: "), p.refresh_error) : null,
    copyField("Agent card URL", p.card_url),
    copyField("A2A URL", p.a2a_url),
    facts([
      ["Card from", p.agent_card_url ?? "given inline"],
      ["Agent", p.agent_url],
      ["Card fetched", when(p.refreshed_at)],
    ]),
    actions.length ? h("div", { class: "actions" }, actions) : null,
  );
}

async function refresh(p) {
  try {
    const updated = await api("POST", `/api/v1/providers/${encodeURIComponent(p.id)}/refresh`);
    announce(
      updated.refresh_error ? `The card could not be fetched: ${updated.refresh_error}` : `${updated.name}: card fetched again.`,
    );
  } catch (error) {
    announce(`Could not fetch the card: ${error.message}`);
  }
  await showAgents(isAdmin);
  const again = document.querySelector(`#agent-list li[data-id="${CSS.escape(p.id)}"] [data-focus-key="refresh"]`);
  if (again) again.focus();
}

async function removeAgent(p) {
  const ok = await confirmAction({
    title: `Remove ${p.name}?`,
    message: "Its card and A2A URL stop working for every client.",
    confirmLabel: "Remove",
  });
  if (!ok) return;
  try {
    await api("DELETE", `/api/v1/providers/${encodeURIComponent(p.id)}`);
    announce(`${p.name} was removed.`);
  } catch (error) {
    announce(`Could not remove ${p.name}: ${error.message}`);
  }
  await showAgents(isAdmin);
  document.getElementById("agents-title").focus();
}

function openRegister() {
  const ids = { url: uid("card-url"), card: uid("card-json"), hint: uid("card-hint") };
  const url = h("input", {
    id: ids.url,
    type: "url",
    maxlength: "2048",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "https://agent.example/.well-known/agent-card.json",
  });
  const card = h("textarea", { id: ids.card, spellcheck: "false", "aria-describedby": ids.hint });
  const dialog = formDialog({
    title: "Register an agent",
    submitLabel: "Register",
    fields: [
      h("div", { class: "field" }, h("label", { for: ids.url }, "Agent card URL"), url),
      h(
        "div",
        { class: "field" },
        h("label", { for: ids.card }, "Or the card itself (JSON)"),
        card,
        h("p", { class: "hint", id: ids.hint }, "An A2A 0.3.0 agent card. A card given by URL is fetched again periodically."),
      ),
    ],
    submit: () => {
      let body;
      if (url.value.trim()) body = { agent_card_url: url.value.trim() };
      else if (card.value.trim()) {
        try {
          body = { agent_card: JSON.parse(card.value) };
        } catch {
          throw new Error("The card is not valid JSON.");
        }
      } else throw new Error("Give the card's URL, or paste the card.");
      return async (close) => {
        const created = await api("POST", "/api/v1/providers", body);
        announce(`${created.name} is registered.`);
        await showAgents(isAdmin);
        dialog.returnFocusTo = document.querySelector(`#agent-list li[data-id="${CSS.escape(created.id)}"] h2`);
        close();
      };
    },
  });
}
