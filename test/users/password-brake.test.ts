import { afterAll, afterEach, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { scriptedServer } from "../peers/scripted-server";
import { expectProblem, readResponse, type Credentials } from "../support/api";
import { createTestApp, type TestApp } from "../support/app";
import { connectedConnector } from "../support/mcp";
import { byHand, pkce, REDIRECT_URI } from "../support/oauth-by-hand";
import { approveInForms } from "../support/oauth-client";

// The brake on password guessing (users/failure-limit.ts), through app.handle; `x-test-client` is the client address.
// What it must never do: take the service offline for everyone behind one address (a NAT, an ingress) because a
// stranger there guessed. It brakes password verification only, per (address, user name), with a much higher ceiling
// per address; and it counts a guess before verifying it, so guesses sent at once cannot all get through.
let t: TestApp;
let alice: Awaited<ReturnType<TestApp["user"]>>;
let bob: Awaited<ReturnType<TestApp["user"]>>;
let proxyUrl: string;
const OFFICE = { "x-test-client": "203.0.113.10" };

beforeAll(async () => {
  t = await createTestApp({
    env: { AUTH__MAX_FAILURES: "3", AUTH__MAX_FAILURES_PER_ADDRESS: "8", AUTH__FAILURE_WINDOW_SECONDS: "60" },
  });
  t.network.serve("https://mcp.example", scriptedServer().handler);
  alice = await t.user("alice");
  bob = await t.user("bob");
  proxyUrl = `${t.publicUrl}/api/v1/connectors/${await connectedConnector(alice.api, "https://mcp.example/a")}/mcp`;
});
afterAll(() => t.close());
// Every test starts with no window open.
afterEach(() => t.clock.advance(61_000));

const me = (as: Credentials, from: Record<string, string> = OFFICE) => t.apiOf(as)("GET", "/api/v1/users/me", { headers: from });
const guess = (username: string, i: number, from: Record<string, string> = OFFICE) =>
  me({ username, password: `wrong-guess-${i}` }, from);

/** An access token of the service's authorization server for alice at `proxyUrl`, as an MCP client gets one. */
async function accessToken(): Promise<string> {
  const oauth = byHand(t.handle, t.publicUrl);
  const client_id = await oauth.register();
  const { verifier, challenge } = pkce();
  const { location } = await approveInForms(
    t.handle,
    oauth.authorizeUrl({ client_id, challenge, resource: proxyUrl }),
    alice.basic,
  );
  const code = new URL(location).searchParams.get("code")!;
  const tokens = await oauth.token({
    grant_type: "authorization_code",
    client_id,
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    resource: proxyUrl,
  });
  return (await tokens.json()).access_token;
}

const ping = (token: string, from: Record<string, string> = OFFICE) =>
  t.handle(
    new Request(proxyUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...from,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    }),
  );

describe("what the brake never touches", () => {
  test("wrong passwords from an address leave API tokens, OAuth access tokens and console sessions from it working", async () => {
    const oauthToken = await accessToken();
    const signIn = await t.handle(
      new Request(`${t.publicUrl}/api/v1/session`, {
        method: "POST",
        headers: { "content-type": "application/json", ...OFFICE },
        body: JSON.stringify(alice.basic),
      }),
    );
    expect(signIn.status).toBe(201);
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;

    for (let i = 0; i < 8; i++) await guess(i % 2 ? "alice" : "admin", i);
    expectProblem(await me(alice.basic), 429);

    expect((await me({ token: alice.token })).status).toBe(200);
    expect((await ping(oauthToken)).status).toBe(200);
    const bySession = await readResponse(
      await t.handle(new Request(`${t.publicUrl}/api/v1/users/me`, { headers: { cookie, ...OFFICE } })),
    );
    expect(bySession.status).toBe(200);
    expect(bySession.body.username).toBe("alice");
  });

  test("unknown bearer tokens are not guesses: they do not count against the address's passwords", async () => {
    for (let i = 0; i < 20; i++) expectProblem(await me({ token: `cst_not-a-token-${i}` }), 401);
    expect((await me(alice.basic)).status).toBe(200);
  });
});

describe("per user name, and per address only at a higher ceiling", () => {
  test("a guesser of alice's password locks out alice's password from that address, never bob's; alice elsewhere goes on", async () => {
    for (let i = 0; i < 3; i++) expectProblem(await guess("alice", i), 401);
    const braked = await me(alice.basic);
    expectProblem(braked, 429);
    expect(braked.headers.get("retry-after")).toBe("60");
    expect((await me(bob.basic)).status).toBe(200);
    expect((await me(alice.basic, { "x-test-client": "198.51.100.1" })).status).toBe(200);
  });

  test("a remembered (already verified) password is braked too: else a braked guesser could guess on for free against it", async () => {
    expect((await me(alice.basic)).status).toBe(200); // verified, remembered for 60 s
    for (let i = 0; i < 3; i++) expectProblem(await guess("alice", i), 401);
    // Were the remembered credential let through, the guesser's next guesses would be answered 429 if wrong and 200
    // if right: a free oracle. Everyone asking for alice by password from this address waits the window out.
    expectProblem(await me(alice.basic), 429);
    expectProblem(await guess("alice", 99), 429);
  });

  test("spraying many user names from one address stops at AUTH__MAX_FAILURES_PER_ADDRESS, for every name from it", async () => {
    for (let i = 0; i < 8; i++) expectProblem(await guess(`nobody-${i}`, i), 401);
    const braked = await me(bob.basic);
    expectProblem(braked, 429);
    expect(braked.body.detail).toContain("from this address");
    expect((await me(bob.basic, { "x-test-client": "198.51.100.2" })).status).toBe(200);
  });

  test("names no user can have share one counter (they cannot fill memory with one counter each)", async () => {
    for (let i = 0; i < 3; i++) expectProblem(await guess(`bad name ${i}\u0000`, i), 401);
    expectProblem(await guess("another bad name", 4), 429);
    expect((await me(bob.basic)).status).toBe(200);
  });

  test("IPv6 clients count by their /64: one host has millions of addresses", async () => {
    for (let i = 0; i < 3; i++) expectProblem(await guess("alice", i, { "x-test-client": `2001:db8:1:2::${i + 1}` }), 401);
    expectProblem(await me(alice.basic, { "x-test-client": "2001:db8:1:2:ffff::9" }), 429);
    expect((await me(alice.basic, { "x-test-client": "2001:db8:1:3::1" })).status).toBe(200);
  });
});

describe("guesses sent at once", () => {
  test("20 concurrent wrong passwords with AUTH__MAX_FAILURES=3: at most 3 are verified, the rest are 429", async () => {
    const verify = spyOn(Bun.password, "verify");
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => guess("alice", i)));
      expect(verify.mock.calls.length).toBeLessThanOrEqual(3);
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 401).length).toBe(verify.mock.calls.length);
      expect(statuses.filter((s) => s === 429).length).toBe(20 - verify.mock.calls.length);
    } finally {
      verify.mockRestore();
    }
  });

  test("the same right password sent 20 times at once is verified once, and every request gets in", async () => {
    const carol = await t.user("carol");
    const verify = spyOn(Bun.password, "verify");
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => me(carol.basic)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      expect(verify.mock.calls.length).toBe(1);
    } finally {
      verify.mockRestore();
    }
  });
});

describe("a disabled user", () => {
  test("their right password is answered exactly as a wrong one (Basic and the console's sign-in), and counted as one", async () => {
    const dora = await t.user("dora");
    expect((await t.api("PATCH", `/api/v1/users/${dora.principal.id}`, { body: { disabled: true } })).status).toBe(200);
    const right = await me(dora.basic);
    const wrong = await guess("dora", 1);
    expectProblem(right, 401);
    expect(right.body.detail).toBe(wrong.body.detail);
    const elsewhere = { "x-test-client": "198.51.100.30" };
    const signIn = (password: string) =>
      t
        .handle(
          new Request(`${t.publicUrl}/api/v1/session`, {
            method: "POST",
            headers: { "content-type": "application/json", ...elsewhere },
            body: JSON.stringify({ username: "dora", password }),
          }),
        )
        .then(readResponse);
    const rightSignIn = await signIn(dora.basic.password);
    expectProblem(rightSignIn, 401);
    expect(rightSignIn.body.detail).toBe((await signIn("also-wrong")).body.detail);
    // Counted as a failure too, or the right one would stand out by not bringing the brake nearer.
    expectProblem(await me(dora.basic), 401);
    expectProblem(await me(dora.basic), 429);
  });

  test("their API token says why it stopped (a token is not guessed: only its holder learns it)", async () => {
    const erin = await t.user("erin");
    await t.api("PATCH", `/api/v1/users/${erin.principal.id}`, { body: { disabled: true } });
    const res = await me({ token: erin.token });
    expectProblem(res, 401);
    expect(res.body.detail).toBe("This user is disabled");
  });
});
