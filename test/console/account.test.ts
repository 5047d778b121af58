import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { type Browser } from "playwright-core";
import { signInToConsole } from "../support/browser";
import { CHROMIUM, launchChromium } from "../support/chromium";
import { freePort } from "../peers/ports";
import { ADMIN, createUser, startTestService, type TestService } from "../support/service";

// The console's session and passwords in a browser. The session cookie is `__Host-cs_session` (Secure, Path=/, no Domain) wherever a browser takes a Secure
// cookie: https, and plain http to localhost or a loopback address. Headless Chromium (Debian's; without it the browser
// part is skipped and says so) signs in at http://127.0.0.1 and http://localhost and stays signed in across a reload.
// Plain http to any other host keeps the old cookie, and the start says the console is not protected there. Setting a
// user's password (an administrator) and one's own offer to revoke API tokens and MCP clients' grants with it.
const available = existsSync(CHROMIUM);
if (!available)
  console.warn(`SKIPPED: the session cookie browser test needs ${CHROMIUM} (Debian package "chromium"), which is not installed`);

const WARNING = "the console is served over plain http";
const warned = (service: TestService) => service.logs.some((line) => line.includes(WARNING));

let atLoopback: TestService;
let atLocalhost: TestService;
let browser: Browser | undefined;

beforeAll(async () => {
  const port = await freePort();
  [atLoopback, atLocalhost] = await Promise.all([
    startTestService(),
    startTestService({ SERVER__PORT: String(port), SERVER__PUBLIC_URL: `http://localhost:${port}` }),
  ]);
  if (available) {
    browser = await launchChromium();
  }
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([atLoopback?.stop(), atLocalhost?.stop()]);
});

const signIn = signInToConsole;

describe.skipIf(!available)("in Chromium", () => {
  for (const which of ["127.0.0.1", "localhost"] as const) {
    test(`at http://${which}: signing in sets __Host-cs_session (Secure, HttpOnly, SameSite=Strict), a reload stays signed in, signing out clears it`, async () => {
      const service = which === "localhost" ? atLocalhost : atLoopback;
      const url = service.config.server.publicUrl ?? service.url;
      expect(new URL(url).hostname).toBe(which);
      const context = await browser!.newContext();
      try {
        const page = await context.newPage();
        await page.goto(url);
        await signIn(page, ADMIN);

        const cookies = await context.cookies(url);
        expect(
          cookies.map((c) => ({ name: c.name, secure: c.secure, httpOnly: c.httpOnly, sameSite: c.sameSite, path: c.path })),
        ).toEqual([{ name: "__Host-cs_session", secure: true, httpOnly: true, sameSite: "Strict", path: "/" }]);
        // The browser sends it back: a new page load finds the session.
        await page.reload();
        await page.waitForSelector("#view-connectors:not([hidden])");
        // A change made with the session (the CSRF token and the origin included) goes through.
        const created = await page.evaluate(async () => {
          const session = await (await fetch("/api/v1/session")).json();
          const res = await fetch("/api/v1/tokens", {
            method: "POST",
            headers: { "content-type": "application/json", "x-csrf-token": session.csrf_token },
            body: JSON.stringify({ name: "from the browser" }),
          });
          return res.status;
        });
        expect(created).toBe(201);

        await page.click("#sign-out");
        await page.waitForSelector("#view-signin:not([hidden])");
        expect(await context.cookies(url)).toEqual([]);
      } finally {
        await context.close();
      }
    }, 30_000);
  }
});

describe.skipIf(!available)("passwords in Chromium", () => {
  test("an administrator sets a user's password: their API tokens end with it unless unticked, and the console says what ended", async () => {
    const { api, url } = atLoopback;
    const kim = await createUser(api, "kim");
    const token = async (password: string) =>
      (await api("POST", "/api/v1/tokens", { as: { username: "kim", password }, body: { name: "agent" } })).body.token as string;
    const first = await token(kim.password);
    await token(kim.password);
    const context = await browser!.newContext();
    try {
      const page = await context.newPage();
      await page.goto(url);
      await signIn(page, ADMIN);
      const setPassword = async (password: string, keepTokens: boolean) => {
        await page.click("nav a[data-view=users]");
        await page.locator("#user-list li", { hasText: "kim" }).getByRole("button", { name: "Set password" }).click();
        await page.waitForSelector("dialog[open]");
        const dialog = page.locator("dialog[open]");
        expect(await dialog.getByLabel("their API tokens").isChecked()).toBe(true);
        expect(await dialog.getByLabel("the access they gave MCP clients").isChecked()).toBe(true);
        await dialog.getByLabel("New password").fill(password);
        if (keepTokens) await dialog.getByLabel("their API tokens").uncheck();
        await page.click("dialog button[type=submit]");
        await page.waitForSelector("dialog", { state: "detached" });
        return page.textContent("#toast");
      };
      expect(await setPassword("kim-password-2", false)).toBe(
        "kim's password was set. Ended: 2 API tokens. No API token or MCP client access still works.",
      );
      expect((await api("GET", "/api/v1/users/me", { as: { token: first } })).status).toBe(401);
      const third = await token("kim-password-2");
      expect(await setPassword("kim-password-3", true)).toBe("kim's password was set. Still working: 1 API token.");
      expect((await api("GET", "/api/v1/users/me", { as: { token: third } })).status).toBe(200);
    } finally {
      await context.close();
    }
  }, 30_000);

  test("changing one's own password keeps one's tokens unless ticked, and says which still work", async () => {
    const { api, url } = atLoopback;
    const lou = await createUser(api, "lou");
    const token = (await api("POST", "/api/v1/tokens", { as: lou, body: { name: "agent" } })).body.token as string;
    const context = await browser!.newContext();
    try {
      const page = await context.newPage();
      await page.goto(url);
      await signIn(page, lou);
      const change = async (from: string, to: string, revokeTokens: boolean) => {
        await page.click("nav a[data-view=account]");
        await page.fill("#password-current", from);
        await page.fill("#password-new", to);
        await page.fill("#password-again", to);
        if (revokeTokens) await page.check("#password-revoke-tokens");
        await page.click("#password-form button[type=submit]");
        await page.waitForFunction(() => document.getElementById("toast")?.textContent?.startsWith("Your password was changed"));
        const said = await page.textContent("#toast");
        await page.evaluate(() => (document.getElementById("toast")!.textContent = ""));
        return said;
      };
      expect(await change(lou.password, "lou-password-2", false)).toBe("Your password was changed. Still working: 1 API token.");
      expect((await api("GET", "/api/v1/users/me", { as: { token } })).status).toBe(200);
      expect(await page.isChecked("#password-revoke-tokens")).toBe(false);
      expect(await change("lou-password-2", "lou-password-3", true)).toBe(
        "Your password was changed. Ended: 1 API token. No API token or MCP client access still works.",
      );
      expect((await api("GET", "/api/v1/users/me", { as: { token } })).status).toBe(401);
    } finally {
      await context.close();
    }
  }, 30_000);
});

test("the start warns when the public URL is plain http to a host that is not loopback, and only then", async () => {
  const plain = await startTestService({ SERVER__PUBLIC_URL: "http://connectors.example" });
  try {
    expect(warned(plain)).toBe(true);
  } finally {
    await plain.stop();
  }
  expect(warned(atLoopback)).toBe(false);
  expect(warned(atLocalhost)).toBe(false);
});
