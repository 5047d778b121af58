import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

/**
 * An MCP client's OAuth state as the SDK asks for it (`OAuthClientProvider`), kept in memory: what a desktop MCP
 * client stores. `authorizationUrl` is where it would send the person's browser.
 */
export function memoryOAuthProvider(options: { redirectUrl?: string; clientName?: string; clientMetadataUrl?: string } = {}) {
  const redirectUrl = options.redirectUrl ?? "http://127.0.0.1:33418/callback";
  const state: { client?: OAuthClientInformationMixed; tokens?: OAuthTokens; verifier?: string; authorizationUrl?: URL } = {};
  // Not `state`: the SDK reads a provider's `state` as the OAuth state parameter's source.
  const provider: OAuthClientProvider & { saved: typeof state } = {
    saved: state,
    get redirectUrl() {
      return redirectUrl;
    },
    ...(options.clientMetadataUrl && { clientMetadataUrl: options.clientMetadataUrl }),
    get clientMetadata(): OAuthClientMetadata {
      return {
        redirect_uris: [redirectUrl],
        client_name: options.clientName ?? "Test MCP client",
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      };
    },
    clientInformation: () => state.client,
    saveClientInformation: (client) => void (state.client = client),
    tokens: () => state.tokens,
    saveTokens: (tokens) => void (state.tokens = tokens),
    redirectToAuthorization: (url) => void (state.authorizationUrl = url),
    saveCodeVerifier: (verifier) => void (state.verifier = verifier),
    codeVerifier: () => state.verifier!,
  };
  return provider;
}

export type Send = (request: Request) => Promise<Response>;

/** The hidden `handle` of the consent page. */
const handleOf = (html: string) => /name="handle" value="([^"]+)"/.exec(html)?.[1];

/**
 * A person in a browser without one: opens the authorization URL, signs in on the service's page, answers the
 * consent page, and returns where the service sent the browser back (the client's redirect URI with code or error).
 */
export async function approveInForms(
  send: Send,
  authorizationUrl: string | URL,
  person: { username: string; password: string },
  decision: "allow" | "deny" = "allow",
) {
  const page = await send(new Request(authorizationUrl));
  const signIn = await page.text();
  if (page.status !== 200 || !signIn.includes('name="step" value="sign-in"'))
    throw new Error(`no sign-in page (${page.status}): ${signIn.slice(0, 300)}`);
  // The sign-in form posts the authorization request (its URL) back with the credentials.
  const post = (fields: Record<string, string>) =>
    send(
      new Request(authorizationUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields).toString(),
        redirect: "manual",
      }),
    );
  const consent = await post({ step: "sign-in", username: person.username, password: person.password });
  const consentHtml = await consent.text();
  if (consent.status !== 200) throw new Error(`sign-in failed (${consent.status}): ${consentHtml.slice(0, 300)}`);
  const handle = handleOf(consentHtml);
  if (!handle) throw new Error(`no consent page: ${consentHtml.slice(0, 300)}`);
  const answered = await post({ handle, step: "consent", decision });
  if (answered.status !== 303) throw new Error(`consent answered ${answered.status}: ${(await answered.text()).slice(0, 300)}`);
  return { location: answered.headers.get("location")!, pages: [signIn, consentHtml] };
}
