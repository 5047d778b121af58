// The console's entry: the session (sign in, sign out), the views and the navigation between them.
import { api, setCsrfToken, whenSignedOut } from "./api.js";
import { initAccount, resetAccount, showAccount } from "./account.js";
import { initAudit, resetAudit, showAudit } from "./audit.js";
import { initAgents, resetAgents, showAgents } from "./agents.js";
import { initConnectors, resetConnectors, setPublicUrl, showConnectors } from "./connectors.js";
import { announce, busy, showError } from "./dom.js";
import { initTokens, resetTokens, showTokens } from "./tokens.js";
import { initUsers, resetUsers, showUsers } from "./users.js";
import { initVirtualServers, resetVirtualServers, showVirtualServers } from "./virtual-servers.js";

const VIEWS = ["connectors", "virtual", "audit", "tokens", "agents", "users", "account"];
/**
 * A hint that this browser holds a session, so that a visitor who never signed in is not sent to the API first: every
 * 401 of the API carries a Basic challenge, which a browser may answer with its own sign-in prompt.
 */
const HINT = "connector-service.console.session-until";

let user = null;

const $ = (id) => document.getElementById(id);

function show(view) {
  for (const section of document.querySelectorAll("main > .view")) section.hidden = section.id !== `view-${view}`;
  for (const link of document.querySelectorAll("nav a[data-view]")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function currentView() {
  const name = location.hash.replace(/^#\/?/, "");
  if (name === "users" && !(user && user.role === "admin")) return "connectors";
  return VIEWS.includes(name) ? name : "connectors";
}

const TITLES = {
  connectors: "Connectors",
  virtual: "Virtual servers",
  tokens: "API tokens",
  agents: "Agents",
  users: "Users",
  account: "Account",
};

/** Shows the view the address names and loads what it lists; `moveFocus` after the person navigated. */
async function route(moveFocus) {
  if (!user) return;
  const view = currentView();
  show(view);
  document.title = `${TITLES[view]} · connector-service`;
  if (moveFocus) $(`${view}-title`).focus();
  if (view === "connectors") await showConnectors();
  if (view === "virtual") await showVirtualServers();
  if (view === "audit") await showAudit(user);
  if (view === "tokens") await showTokens();
  if (view === "agents") await showAgents(user.role === "admin");
  if (view === "users") await showUsers(user);
  if (view === "account") showAccount(user);
}

function signedIn(session, moveFocus) {
  user = session.user;
  setCsrfToken(session.csrf_token);
  setPublicUrl(session.public_url);
  try {
    localStorage.setItem(HINT, session.expires_at);
  } catch {
    // Storage may be off; the console then asks the API on every load.
  }
  $("who-name").textContent = `${user.username}${user.role === "admin" ? " (administrator)" : ""}`;
  for (const element of document.querySelectorAll("[data-admin]")) element.hidden = user.role !== "admin";
  $("topbar").hidden = false;
  $("loading").hidden = true;
  return route(moveFocus);
}

function signedOut(message) {
  user = null;
  setCsrfToken(null);
  try {
    localStorage.removeItem(HINT);
  } catch {
    // See signedIn.
  }
  resetConnectors();
  resetTokens();
  resetVirtualServers();
  resetAudit();
  resetAgents();
  resetUsers();
  resetAccount();
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();
  $("topbar").hidden = true;
  $("loading").hidden = true;
  show("signin");
  document.title = "Sign in · connector-service";
  if (message) showError($("signin-error"), new Error(message));
}

async function signIn(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const error = $("signin-error");
  const username = form.elements.username.value.trim();
  const password = form.elements.password.value;
  if (!username || !password) {
    showError(error, new Error("Enter your user name and password."));
    (username ? form.elements.password : form.elements.username).focus();
    return;
  }
  await busy(form.querySelector("button[type=submit]"), async () => {
    try {
      const session = await api("POST", "/api/v1/session", { username, password }, { quiet401: true });
      showError(error, null);
      form.reset();
      await signedIn(session, true);
      announce(`Signed in as ${session.user.username}.`);
    } catch (e) {
      showError(error, e);
      form.elements.password.select();
      form.elements.password.focus();
    }
  });
}

async function signOut(event) {
  await busy(event.currentTarget, async () => {
    try {
      await api("DELETE", "/api/v1/session", undefined, { quiet401: true });
    } catch {
      // Already over: nothing to end.
    }
  });
  signedOut();
  $("signin-title").focus();
  announce("Signed out.");
}

async function start() {
  initConnectors();
  initTokens();
  initVirtualServers();
  initAudit();
  initAgents();
  initUsers();
  initAccount();
  $("signin-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", signOut);
  // Only the views' names are routes: any other fragment leaves the view as it is.
  window.addEventListener("hashchange", () => {
    if (VIEWS.includes(location.hash.replace(/^#\/?/, ""))) route(true);
  });
  $("skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    $("main").focus();
  });
  whenSignedOut(() => {
    if (user) signedOut("Your session has ended. Sign in again.");
  });

  let until = null;
  try {
    until = localStorage.getItem(HINT);
  } catch {
    until = "unknown";
  }
  if (until && (until === "unknown" || Date.parse(until) > Date.now())) {
    try {
      await signedIn(await api("GET", "/api/v1/session", undefined, { quiet401: true }), false);
      return;
    } catch {
      // No session (or no longer): sign in.
    }
  }
  signedOut();
}

start();
