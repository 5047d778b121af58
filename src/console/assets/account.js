// The signed-in person: who they are, and changing their own password.
import { api } from "./api.js";
import { announce, busy, h, showError } from "./dom.js";

export function initAccount() {
  const form = document.getElementById("password-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(form.querySelector("button[type=submit]"), () => changePassword(form));
  });
}

export function showAccount(user) {
  // For password managers: whose password this is.
  document.getElementById("password-username").defaultValue = user.username;
  document
    .getElementById("account-who")
    .replaceChildren("Signed in as ", h("strong", {}, user.username), user.role === "admin" ? " (administrator)." : ".");
}

export function resetAccount() {
  document.getElementById("password-form").reset();
  document.getElementById("account-who").replaceChildren();
}

async function changePassword(form) {
  const error = document.getElementById("password-error");
  showError(error, null);
  const current = form.elements.current_password.value;
  const next = form.elements.new_password.value;
  if (!current) return showError(error, new Error("Enter your current password."));
  if (next.length < 8) return showError(error, new Error("The new password needs 8 characters or more."));
  if (next !== form.elements.again.value) return showError(error, new Error("The two new passwords differ."));
  let answer;
  try {
    answer = await api("PUT", "/api/v1/users/me/password", {
      current_password: current,
      new_password: next,
      revoke_tokens: form.elements.revoke_tokens.checked,
      revoke_grants: form.elements.revoke_grants.checked,
    });
  } catch (e) {
    return showError(error, e);
  }
  form.reset();
  announce(`Your password was changed. ${describeChange(answer)}`);
}

const counted = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** What a password change or reset ended and what still works, in a sentence (the API's PasswordChanged). */
export function describeChange({ revoked, still_working: kept }) {
  const ended = [
    revoked.console_sessions && counted(revoked.console_sessions, "other console session", "other console sessions"),
    revoked.api_tokens && counted(revoked.api_tokens, "API token", "API tokens"),
    revoked.grants && counted(revoked.grants, "MCP client's access", "MCP clients' access"),
  ].filter(Boolean);
  const working = [
    kept.api_tokens && counted(kept.api_tokens, "API token", "API tokens"),
    kept.grants && counted(kept.grants, "MCP client's access", "MCP clients' access"),
  ].filter(Boolean);
  return [
    ended.length ? `Ended: ${ended.join(", ")}.` : "",
    working.length ? `Still working: ${working.join(", ")}.` : "No API token or MCP client access still works.",
  ]
    .filter(Boolean)
    .join(" ");
}
