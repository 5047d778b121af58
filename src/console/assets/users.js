// Users, for administrators: add, change role, disable or enable, set a password, delete.
import { describeChange } from "./account.js";
import { api } from "./api.js";
import { announce, busy, confirmAction, formDialog, h, hidden, uid, when } from "./dom.js";

let me = null;

export function initUsers() {
  document.getElementById("add-user").addEventListener("click", openAdd);
}

export async function showUsers(user) {
  me = user;
  try {
    const { items } = await api("GET", "/api/v1/users");
    document.getElementById("user-list").replaceChildren(...items.map(userRow));
  } catch (error) {
    announce(`Could not load the users: ${error.message}`);
  }
}

export function resetUsers() {
  document.getElementById("user-list").replaceChildren();
}

function userRow(user) {
  const self = me && user.id === me.id;
  const button = (key, label, onclick, cls = "button small") =>
    h("button", { type: "button", class: cls, "data-focus-key": key, onclick }, label, hidden(` ${user.username}`));
  return h(
    "li",
    { "data-id": user.id },
    h(
      "div",
      { class: "main" },
      h(
        "p",
        { class: "name" },
        user.username,
        " ",
        h("span", { class: "tag" }, user.role === "admin" ? "administrator" : "user"),
        user.disabled ? [" ", h("span", { class: "tag bad" }, "disabled")] : null,
        self ? [" ", h("span", { class: "tag" }, "you")] : null,
      ),
      h("p", { class: "muted small" }, "Added ", when(user.created_at)),
    ),
    // Nobody demotes, disables or deletes themselves (the service refuses it): an administrator always remains.
    self
      ? null
      : h(
          "div",
          { class: "actions" },
          button("role", user.role === "admin" ? "Make user" : "Make administrator", (e) =>
            busy(e.currentTarget, () => update(user, { role: user.role === "admin" ? "user" : "admin" }, "role")),
          ),
          button("disable", user.disabled ? "Enable" : "Disable", (e) =>
            busy(e.currentTarget, () => update(user, { disabled: !user.disabled }, "disable")),
          ),
          button("password", "Set password", () => openSetPassword(user)),
          button("delete", "Delete", () => deleteUser(user), "button small danger"),
        ),
  );
}

async function update(user, change, focusKey) {
  try {
    const updated = await api("PATCH", `/api/v1/users/${encodeURIComponent(user.id)}`, change);
    announce(
      "role" in change
        ? `${updated.username} is now ${updated.role === "admin" ? "an administrator" : "a user"}.`
        : `${updated.username} is ${updated.disabled ? "disabled: their sign-ins, tokens and sessions stop working" : "enabled"}.`,
    );
  } catch (error) {
    announce(`Could not change ${user.username}: ${error.message}`);
  }
  await showUsers(me);
  refocus(user.id, focusKey);
}

function refocus(id, key) {
  const target = document.querySelector(`#user-list li[data-id="${CSS.escape(id)}"] [data-focus-key="${key}"]`);
  (target || document.getElementById("users-title")).focus();
}

async function deleteUser(user) {
  const ok = await confirmAction({
    title: `Delete ${user.username}?`,
    message:
      "Their connectors are deleted too (upstream grants revoked), and their tokens, sessions and MCP clients' grants end. This cannot be undone.",
    confirmLabel: "Delete",
  });
  if (!ok) return;
  try {
    await api("DELETE", `/api/v1/users/${encodeURIComponent(user.id)}`);
    announce(`${user.username} was deleted.`);
  } catch (error) {
    announce(`Could not delete ${user.username}: ${error.message}`);
  }
  await showUsers(me);
  document.getElementById("users-title").focus();
}

function passwordField(id, label) {
  const hintId = `${id}-hint`;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    h("input", {
      id,
      type: "password",
      autocomplete: "new-password",
      required: true,
      minlength: "8",
      maxlength: "1024",
      "aria-describedby": hintId,
    }),
    h("p", { class: "hint", id: hintId }, "8 characters or more."),
  );
}

function openAdd() {
  const ids = { username: uid("username"), password: uid("password"), role: uid("role"), hint: uid("username-hint") };
  const dialog = formDialog({
    title: "Add a user",
    submitLabel: "Add user",
    fields: [
      h(
        "div",
        { class: "field" },
        h("label", { for: ids.username }, "User name"),
        h("input", {
          id: ids.username,
          required: true,
          maxlength: "64",
          autocomplete: "off",
          autocapitalize: "none",
          spellcheck: "false",
          "aria-describedby": ids.hint,
        }),
        h("p", { class: "hint", id: ids.hint }, "Letters, digits and . _ @ - (up to 64)."),
      ),
      passwordField(ids.password, "Password"),
      h(
        "div",
        { class: "field" },
        h("label", { for: ids.role }, "Role"),
        h("select", { id: ids.role }, h("option", { value: "user" }, "User"), h("option", { value: "admin" }, "Administrator")),
      ),
    ],
    submit: () => {
      const body = {
        username: dialog.querySelector(`#${ids.username}`).value.trim(),
        password: dialog.querySelector(`#${ids.password}`).value,
        role: dialog.querySelector(`#${ids.role}`).value,
      };
      return async (close) => {
        const created = await api("POST", "/api/v1/users", body);
        announce(`${created.username} was added.`);
        await showUsers(me);
        dialog.returnFocusTo = document.querySelector(
          `#user-list li[data-id="${CSS.escape(created.id)}"] [data-focus-key="role"]`,
        );
        close();
      };
    },
  });
}

function openSetPassword(user) {
  const id = uid("new-password");
  // Checked: a reset usually follows a password someone else may know, and what they made with it should end too.
  const [tokensId, grantsId] = [uid("revoke-tokens"), uid("revoke-grants")];
  const revokeTokens = h("input", { type: "checkbox", id: tokensId, checked: true });
  const revokeGrants = h("input", { type: "checkbox", id: grantsId, checked: true });
  const dialog = formDialog({
    title: `Set ${user.username}'s password`,
    submitLabel: "Set password",
    fields: [
      h("input", { name: "username", autocomplete: "username", value: user.username, hidden: true, readonly: true }),
      passwordField(id, "New password"),
      h(
        "fieldset",
        {},
        h("legend", {}, "Their console sessions end. Also revoke"),
        h("label", { class: "choice", for: tokensId }, revokeTokens, h("span", {}, "their API tokens")),
        h("label", { class: "choice", for: grantsId }, revokeGrants, h("span", {}, "the access they gave MCP clients")),
      ),
    ],
    submit: () => {
      const body = {
        new_password: dialog.querySelector(`#${id}`).value,
        revoke_tokens: revokeTokens.checked,
        revoke_grants: revokeGrants.checked,
      };
      return async (close) => {
        const answer = await api("POST", `/api/v1/users/${encodeURIComponent(user.id)}/password`, body);
        announce(`${user.username}'s password was set. ${describeChange(answer)}`);
        close();
      };
    },
  });
}
