import { Elysia, t } from "elysia";
import { Problem } from "../http-errors/model";
import type { ApiBodyPlugin } from "../http/json-body";
import { IdParams } from "../http/params";
import type { AuthPlugin } from "./auth-plugin";
import {
  ChangePasswordBody,
  CreatedToken,
  CreateTokenBody,
  CreateUserBody,
  PasswordChanged,
  ResetPasswordBody,
  TokenList,
  UpdateUserBody,
  UserList,
  UserView,
} from "./model";
import type { Brake } from "./failure-limit";
import type { UserService } from "./service";

const problems = { 401: Problem, 403: Problem, 404: Problem, 409: Problem, 422: Problem };

export function userRoutes(users: UserService, auth: AuthPlugin, apiBody: ApiBodyPlugin, brakeFor: (request: Request) => Brake) {
  return new Elysia({ prefix: "/api/v1", detail: { tags: ["Users"] } })
    .use(auth)
    .use(apiBody)
    .post(
      "/users",
      async ({ principal, body, set }) => {
        const user = await users.createUser(principal, body);
        set.status = 201;
        set.headers.location = `/api/v1/users/${user.id}`;
        return user;
      },
      {
        auth: true,
        body: CreateUserBody,
        response: { 201: UserView, ...problems },
        detail: { summary: "Create a user (administrators only)" },
      },
    )
    .get("/users", ({ principal }) => users.listUsers(principal), {
      auth: true,
      response: { 200: UserList, ...problems },
      detail: { summary: "List users (administrators only)" },
    })
    .get("/users/me", ({ principal }) => users.me(principal), {
      auth: true,
      response: { 200: UserView, ...problems },
      detail: { summary: "The authenticated user" },
    })
    .put("/users/me/password", ({ principal, body, request }) => users.changeOwnPassword(principal, body, brakeFor(request)), {
      auth: true,
      body: ChangePasswordBody,
      response: { 200: PasswordChanged, ...problems, 429: Problem },
      detail: {
        summary: "Change your own password",
        description:
          "Needs the current one (a wrong one counts toward AUTH__MAX_FAILURES). Your other console sessions end; your API tokens and the grants you gave MCP clients keep working unless revoke_tokens or revoke_grants says otherwise. The answer counts what was revoked and what still works.",
      },
    })
    .get("/users/:id", ({ principal, params }) => users.getUser(principal, params.id), {
      auth: true,
      params: IdParams,
      response: { 200: UserView, ...problems },
      detail: { summary: "A user (administrators: anyone; others: themselves)" },
    })
    .patch("/users/:id", ({ principal, params, body }) => users.updateUser(principal, params.id, body), {
      auth: true,
      params: IdParams,
      body: UpdateUserBody,
      response: { 200: UserView, ...problems },
      detail: {
        summary: "Change a user's role or rate limit, or disable or enable them (administrators only)",
        description:
          "A disabled user cannot sign in, and their passwords, API tokens, console sessions and OAuth grants stop working (within 1 s on every replica). Not for yourself (409). " +
          '`rate_limits` sets this user\'s own ceiling on MCP requests through the proxy in place of RATE__USER_REQUESTS_PER_MINUTE (null: the default again), applied within 1 s on every replica (docs/behaviour.md "Rate limits").',
      },
    })
    .delete(
      "/users/:id",
      async ({ principal, params, set }) => {
        await users.deleteUser(principal, params.id);
        set.status = 204;
      },
      {
        auth: true,
        params: IdParams,
        response: { 204: t.Void(), ...problems },
        detail: {
          summary: "Delete a user and everything they own (administrators only)",
          description:
            "Their connectors are deleted as DELETE /api/v1/connectors/{id} would (deployments removed, upstream grants revoked); their tokens, sessions and the grants they gave go too. Not yourself (409).",
        },
      },
    )
    .post("/users/:id/password", ({ principal, params, body }) => users.resetPassword(principal, params.id, body), {
      auth: true,
      params: IdParams,
      body: ResetPasswordBody,
      response: { 200: PasswordChanged, ...problems },
      detail: {
        summary: "Set a user's password (administrators only)",
        description:
          "The user's console sessions end, and so do their API tokens and the grants they gave MCP clients unless revoke_tokens or revoke_grants is false. The answer counts what was revoked and what still works.",
      },
    })
    .post(
      "/tokens",
      async ({ principal, body, set }) => {
        const token = await users.createToken(principal, body);
        set.status = 201;
        set.headers.location = `/api/v1/tokens/${token.id}`;
        return token;
      },
      {
        auth: true,
        body: CreateTokenBody,
        response: { 201: CreatedToken, ...problems },
        detail: {
          tags: ["API tokens"],
          summary: "Create an API token for yourself",
          description: "The token is shown once, in this response; only its SHA-256 digest is stored.",
        },
      },
    )
    .get("/tokens", ({ principal }) => users.listTokens(principal), {
      auth: true,
      response: { 200: TokenList, ...problems },
      detail: { tags: ["API tokens"], summary: "List your API tokens" },
    })
    .delete(
      "/tokens/:id",
      async ({ principal, params, set }) => {
        await users.deleteToken(principal, params.id);
        set.status = 204;
      },
      {
        auth: true,
        params: IdParams,
        response: { 204: t.Void(), ...problems },
        detail: { tags: ["API tokens"], summary: "Revoke one of your API tokens" },
      },
    );
}
