import type { Browser, Page } from "playwright-core";

/** What the page's policy refused (Chromium reports each refusal as a console error) and its script errors. */
export function watchPolicy(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  return problems;
}

/**
 * Where a frame of `url` ends up when a page of another origin (a server on another loopback port) embeds it: `url`
 * itself when the browser shows it, an error page's URL when the page refused to be framed. Clickjacking needs the
 * former.
 */
export async function framedUrl(browser: Browser, url: string): Promise<string> {
  const other = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () =>
      new Response(`<!doctype html><title>Elsewhere</title><iframe id="f" src="${url}" width="800" height="600"></iframe>`, {
        headers: { "content-type": "text/html; charset=utf-8" },
      }),
  });
  const page = await browser.newPage();
  try {
    // The page's load event waits for its frames, an error page in a refused frame included.
    await page.goto(`http://127.0.0.1:${other.port}/`, { waitUntil: "load" });
    return (
      page
        .frames()
        .find((f) => f !== page.mainFrame())
        ?.url() ?? ""
    );
  } finally {
    await page.close();
    other.stop(true);
  }
}

/** Signs in on the console's sign-in page (already open) and waits for the connectors view. */
export async function signInToConsole(page: Page, as: { username: string; password: string }) {
  await page.waitForSelector("#view-signin:not([hidden])");
  await page.fill("#signin-username", as.username);
  await page.fill("#signin-password", as.password);
  await page.click("#signin-form button[type=submit]");
  await page.waitForSelector("#view-connectors:not([hidden])");
}

/**
 * A picture for the README, renewed only when asked (`UPDATE_SCREENSHOT=1`): the page clipped to `clip` (CSS pixels of
 * the viewport), the toast hidden so that it covers nothing. Written to `path` (a PNG beside the test).
 */
export async function readmeScreenshot(
  page: Page,
  path: string,
  clip: { x: number; y: number; width: number; height: number },
): Promise<void> {
  if (process.env.UPDATE_SCREENSHOT !== "1") return;
  await page.evaluate(() => (document.getElementById("toast")!.hidden = true));
  await page.screenshot({ path, clip });
  console.log(`wrote ${path}`);
}
