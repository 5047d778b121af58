import { t } from "elysia";
import { UserRateLimits } from "../rate-limits/model";

export const USERNAME_PATTERN = "^[A-Za-z0-9._@-]{1,64}$";
export const ROLES = ["admin", "user"] as const;
// Not t.UnionEnum: Elysia gives that a default (its first member), so a user created without a role became an administrator.
export const Role = t.Union([t.Literal("admin"), t.Literal("user")], { description: "admin or user" });
export type Role = typeof Role.static;

const Password = (description: string) =>
  t.String({ minLength: 8, maxLength: 1024, description: `${description}: 8 to 1024 characters` });

export const CreateUserBody = t.Object(
  {
    username: t.String({ pattern: USERNAME_PATTERN, description: "1 to 64 letters, digits or . _ @ -" }),
    password: Password("The password"),
    role: t.Optional(Role),
  },
  { additionalProperties: false, examples: [{ username: "alice", password: "correct horse battery", role: "user" }] },
);
export type CreateUserBody = typeof CreateUserBody.static;

export const UpdateUserBody = t.Object(
  {
    role: t.Optional(Role),
    disabled: t.Optional(
      t.Boolean({
        description:
          "true: the user can no longer sign in or use tokens or grants (their console sessions end); false: enabled again",
      }),
    ),
    rate_limits: t.Optional(
      t.Union([UserRateLimits, t.Null()], {
        description:
          "This user's own ceiling on MCP requests through the proxy, in place of RATE__USER_REQUESTS_PER_MINUTE; null: the default again",
      }),
    ),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [{ disabled: true }, { role: "admin" }, { rate_limits: { requests_per_minute: 120 } }],
  },
);
export type UpdateUserBody = typeof UpdateUserBody.static;

/** What a password change may also revoke: a password thought known to someone else leaves their tokens working otherwise. */
const revocations = (byDefault: boolean) => ({
  revoke_tokens: t.Optional(t.Boolean({ description: `true: the user's API tokens are revoked too (default ${byDefault})` })),
  revoke_grants: t.Optional(
    t.Boolean({
      description: `true: the grants the user gave MCP clients (GET /api/v1/grants) are revoked too, with their access and refresh tokens (default ${byDefault})`,
    }),
  ),
});

export const ChangePasswordBody = t.Object(
  {
    current_password: t.String({ minLength: 1, maxLength: 1024 }),
    new_password: Password("The new password"),
    ...revocations(false),
  },
  {
    additionalProperties: false,
    examples: [{ current_password: "correct horse battery", new_password: "staple of a longer passphrase" }],
  },
);
export type ChangePasswordBody = typeof ChangePasswordBody.static;

export const ResetPasswordBody = t.Object(
  { new_password: Password("The new password"), ...revocations(true) },
  { additionalProperties: false, examples: [{ new_password: "a new passphrase for alice" }] },
);
export type ResetPasswordBody = typeof ResetPasswordBody.static;

const Credentials = (what: string) =>
  t.Object({
    console_sessions: t.Integer({ minimum: 0, description: `console sessions ${what}` }),
    api_tokens: t.Integer({ minimum: 0, description: `API tokens ${what}` }),
    grants: t.Integer({ minimum: 0, description: `grants to MCP clients ${what}` }),
  });
/** The answer to a password change or reset: what ended with the old password, and what goes on working. */
export const PasswordChanged = t.Object({
  revoked: Credentials("that ended"),
  still_working: Credentials("that still work (a session: the one that made the change)"),
});
export type PasswordChanged = typeof PasswordChanged.static;

export const SignInBody = t.Object(
  { username: t.String({ minLength: 1, maxLength: 64 }), password: t.String({ minLength: 1, maxLength: 1024 }) },
  // The bootstrap administrator; its generated password is in the first start's log.
  { additionalProperties: false, examples: [{ username: "admin", password: "the-password-from-the-log" }] },
);
export type SignInBody = typeof SignInBody.static;

export const UserView = t.Object({
  id: t.String({ format: "uuid" }),
  username: t.String(),
  role: Role,
  disabled: t.Boolean(),
  rate_limits: t.Union([UserRateLimits, t.Null()], {
    description: "Set by an administrator: this user's own ceiling; null: RATE__USER_REQUESTS_PER_MINUTE applies",
  }),
  created_at: t.String({ format: "date-time" }),
});
export type UserView = typeof UserView.static;
export const UserList = t.Object({ items: t.Array(UserView) });

export const SessionView = t.Object({
  user: UserView,
  csrf_token: t.String({ description: "Send it as X-CSRF-Token with every change made with this session" }),
  expires_at: t.String({ format: "date-time" }),
  public_url: t.String({
    description:
      "SERVER__PUBLIC_URL: where MCP clients reach this service (proxy URLs start with it), whatever name the console was opened at",
  }),
});

export const MAX_TOKEN_LIFETIME_DAYS = 3650;
export const CreateTokenBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 100, description: "What the token is for" }),
    expires_in_days: t.Optional(t.Integer({ minimum: 1, maximum: MAX_TOKEN_LIFETIME_DAYS })),
  },
  { additionalProperties: false, examples: [{ name: "my agent", expires_in_days: 90 }] },
);
export type CreateTokenBody = typeof CreateTokenBody.static;

export const TokenView = t.Object({
  id: t.String({ format: "uuid" }),
  name: t.String(),
  created_at: t.String({ format: "date-time" }),
  expires_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
});
export type TokenView = typeof TokenView.static;
export const TokenList = t.Object({ items: t.Array(TokenView) });
export const CreatedToken = t.Composite([
  TokenView,
  t.Object({ token: t.String({ description: "The bearer token. Shown only in this response." }) }),
]);
export type CreatedToken = typeof CreatedToken.static;

/**
 * The authenticated caller, as services see it. `connector` or `boundVirtualServer` is set for an access token of
 * the service's own authorization server: it acts for the person only at that connector's MCP proxy URL, or at that
 * virtual server's MCP URL (whose members it reaches through the virtual server), nowhere else.
 */
export type Principal = {
  id: string;
  username: string;
  role: Role;
  connector?: string;
  boundVirtualServer?: string;
  /** How the request authenticated, for the audit trail: basic, session, token:<API token id>, oauth:<client id>. */
  credential?: string;
  /**
   * Set by a virtual server's endpoint on the caller of its member calls (virtual-servers/endpoint.ts): the virtual
   * server the request came through, which the proxy's audit record and metrics name. Never from authentication.
   */
  virtualServer?: string;
};
