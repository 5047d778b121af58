import { randomBytes } from "node:crypto";
import { Conflict, Forbidden, invalidField, NotFound } from "../http-errors/errors";
import type {
  ChangePasswordBody,
  CreateTokenBody,
  CreatedToken,
  CreateUserBody,
  PasswordChanged,
  Principal,
  ResetPasswordBody,
  TokenView,
  UpdateUserBody,
  UserView,
} from "./model";
import type { Brake } from "./failure-limit";
import type { RateOverrides } from "./rate-overrides";
import type { TokenRow, UserRepository, UserRow } from "./repository";
import { sha256Hex } from "../secrets/digest";

export type UserServiceDeps = {
  users: UserRepository;
  clock: () => number;
  newId: () => string;
  /** AUTH__MAX_TOKENS_PER_USER. */
  maxTokensPerUser: number;
  /** What goes with a deleted user besides their rows (their connectors' deployments and upstream grants). */
  beforeDelete?: (userId: string) => Promise<void>;
  /** The grants the user gave MCP clients (the authorization server's): counted, and revoked with a password when asked. */
  grants?: { of(userId: string): Promise<{ id: string }[]>; revoke(userId: string, id: string): Promise<boolean> };
  /** The proxy's cache of per-user rate limits: told when one changes here. */
  rateOverrides?: Pick<RateOverrides, "forget">;
};

const DAY_MS = 86_400_000;
/** Prefix makes leaked tokens recognisable to secret scanners. */
export const TOKEN_PREFIX = "cst_";

export const digestToken = sha256Hex;

/** A password made for a person to copy once: 144 random bits, URL-safe. */
const generatePassword = () => randomBytes(18).toString("base64url");

/** What `reset-admin-password` did. */
export type AdminPasswordReset = { username: string; password: string; disabled: boolean; console_sessions_ended: number };

/** Who a user is, for another feature (the person behind a grant, who started an authorization): never their password hash. */
export const findPrincipal =
  (users: Pick<UserRepository, "findById">) =>
  async (id: string): Promise<Principal | undefined> => {
    const row = await users.findById(id);
    return row && { id: row.id, username: row.username, role: row.role };
  };

export function createUserService({
  users,
  clock,
  newId,
  maxTokensPerUser,
  beforeDelete,
  grants,
  rateOverrides,
}: UserServiceDeps) {
  const iso = (ms: number) => new Date(ms).toISOString();
  const userView = (row: UserRow): UserView => ({
    id: row.id,
    username: row.username,
    role: row.role,
    disabled: row.disabled_at !== null,
    rate_limits: row.requests_per_minute === null ? null : { requests_per_minute: row.requests_per_minute },
    created_at: iso(row.created_at),
  });
  const tokenView = (row: TokenRow): TokenView => ({
    id: row.id,
    name: row.name,
    created_at: iso(row.created_at),
    expires_at: row.expires_at === null ? null : iso(row.expires_at),
  });

  /** What a new password ends: the user's console sessions but `keep`, and the tokens and grants asked for; and what is left. */
  async function endWithPassword(
    userId: string,
    keep: string | undefined,
    revoke: { tokens: boolean; grants: boolean },
  ): Promise<PasswordChanged> {
    const revoked = {
      console_sessions: await users.deleteSessionsOf(userId, keep),
      api_tokens: revoke.tokens ? await users.deleteTokensOf(userId) : 0,
      grants: revoke.grants ? await revokeGrants(userId) : 0,
    };
    const still_working = {
      console_sessions: keep === undefined ? 0 : 1,
      api_tokens: (await users.listTokens(userId)).length,
      grants: grants ? (await grants.of(userId)).length : 0,
    };
    return { revoked, still_working };
  }

  /** Revokes every grant the user gave; how many it ended (one revoked meanwhile by other means is not counted). */
  async function revokeGrants(userId: string): Promise<number> {
    if (!grants) return 0;
    let revoked = 0;
    for (const grant of await grants.of(userId)) if (await grants.revoke(userId, grant.id)) revoked++;
    return revoked;
  }

  const requireAdmin = (caller: Principal) => {
    if (caller.role !== "admin") throw new Forbidden("Only administrators can manage users");
  };

  async function insertUser(username: string, password: string, role: UserRow["role"]): Promise<UserRow | undefined> {
    const now = clock();
    const row: UserRow = {
      id: newId(),
      username,
      password_hash: await Bun.password.hash(password, "argon2id"),
      role,
      disabled_at: null,
      requests_per_minute: null,
      created_at: now,
      updated_at: now,
    };
    return (await users.insert(row)) ? row : undefined;
  }

  return {
    async createUser(caller: Principal, body: CreateUserBody): Promise<UserView> {
      requireAdmin(caller);
      const row = await insertUser(body.username, body.password, body.role ?? "user");
      if (!row) throw new Conflict(`A user named "${body.username}" already exists`);
      return userView(row);
    },

    async listUsers(caller: Principal): Promise<{ items: UserView[] }> {
      requireAdmin(caller);
      return { items: (await users.list()).map(userView) };
    },

    /** One user: administrators see anyone, a user themself. */
    async getUser(caller: Principal, id: string): Promise<UserView> {
      if (caller.role !== "admin" && caller.id !== id) throw new NotFound(`No user ${id}`);
      const row = await users.findById(id);
      if (!row) throw new NotFound(`No user ${id}`);
      return userView(row);
    },

    /** Administrators change a user's role or disable them; never their own (that could lock everyone out). */
    async updateUser(caller: Principal, id: string, body: UpdateUserBody): Promise<UserView> {
      requireAdmin(caller);
      if (body.role === undefined && body.disabled === undefined && body.rate_limits === undefined)
        throw invalidField("body", "must change role, disabled or rate_limits");
      if (id === caller.id && (body.disabled === true || body.role === "user")) {
        throw new Conflict("You cannot disable yourself or give up your own administrator role: ask another administrator");
      }
      const row = await users.findById(id);
      if (!row) throw new NotFound(`No user ${id}`);
      const now = clock();
      if (body.role !== undefined) await users.setRole(id, body.role, now);
      if (body.disabled !== undefined) {
        await users.setDisabled(id, body.disabled ? (row.disabled_at ?? now) : null, now);
        if (body.disabled) await users.deleteSessionsOf(id);
      }
      if (body.rate_limits !== undefined) {
        await users.setRequestsPerMinute(id, body.rate_limits?.requests_per_minute ?? null, now);
        rateOverrides?.forget(id);
      }
      return userView((await users.findById(id))!);
    },

    /** Administrators delete a user with everything they own: connectors (and their deployments), tokens, sessions, grants. */
    async deleteUser(caller: Principal, id: string): Promise<void> {
      requireAdmin(caller);
      if (id === caller.id) throw new Conflict("You cannot delete yourself: ask another administrator");
      if (!(await users.findById(id))) throw new NotFound(`No user ${id}`);
      await beforeDelete?.(id);
      await users.delete(id);
    },

    /**
     * A user changes their own password, proving the current one; their other console sessions end, and their API
     * tokens and grants too if they ask. The current password is verified under `brake` (AUTH__MAX_FAILURES): a stolen
     * session or token must not become a way to guess the password.
     */
    async changeOwnPassword(
      caller: Principal & { session?: string },
      body: ChangePasswordBody,
      brake: Brake,
    ): Promise<PasswordChanged> {
      const row = await users.findById(caller.id);
      if (!row) throw new NotFound("The authenticated user no longer exists");
      const attempt = brake.attempt(row.username);
      const right = await Bun.password.verify(body.current_password, row.password_hash).catch((e) => {
        attempt.succeeded();
        throw e;
      });
      if (!right) {
        attempt.failed();
        throw invalidField("current_password", "is not your current password");
      }
      attempt.succeeded();
      await users.updatePassword(row.id, await Bun.password.hash(body.new_password, "argon2id"), clock());
      return endWithPassword(row.id, caller.session, {
        tokens: body.revoke_tokens ?? false,
        grants: body.revoke_grants ?? false,
      });
    },

    /**
     * An administrator sets another user's password; that user's console sessions end, and by default their API tokens
     * and grants too: a reset is what follows a forgotten or a leaked password, and only the user knows which.
     */
    async resetPassword(caller: Principal, id: string, body: ResetPasswordBody): Promise<PasswordChanged> {
      requireAdmin(caller);
      if (!(await users.findById(id))) throw new NotFound(`No user ${id}`);
      await users.updatePassword(id, await Bun.password.hash(body.new_password, "argon2id"), clock());
      return endWithPassword(id, undefined, { tokens: body.revoke_tokens ?? true, grants: body.revoke_grants ?? true });
    },

    async me(caller: Principal): Promise<UserView> {
      const row = await users.findById(caller.id);
      if (!row) throw new NotFound("The authenticated user no longer exists");
      return userView(row);
    },

    /**
     * Creates the bootstrap administrator when it does not exist. With a configured password, an existing
     * administrator's password is brought in line with it. Returns the generated password, if one was made.
     */
    async ensureAdmin(username: string, password: string | undefined): Promise<{ generated?: string }> {
      const existing = await users.findByUsername(username);
      if (existing) {
        if (password !== undefined && !(await Bun.password.verify(password, existing.password_hash))) {
          await users.updatePassword(existing.id, await Bun.password.hash(password, "argon2id"), clock());
        }
        return {};
      }
      const generated = password === undefined ? generatePassword() : undefined;
      // Another process sharing the store (a replica, started at the same moment) may have created it while this
      // one hashed: then its password is the administrator's, and this one's is never shown.
      const created = await insertUser(username, password ?? generated!, "admin");
      return created && generated ? { generated } : {};
    },

    /**
     * A lost administrator password (`connector-service reset-admin-password`, run on the database): the user
     * AUTH__ADMIN_USERNAME names — the bootstrap administrator — or, when it was renamed or deleted, the first
     * administrator made, gets a new generated password. Its console sessions end, as with any reset (whoever held the
     * old password may hold one); its API tokens and grants stay: they are not the password. Undefined: no administrator.
     */
    async resetAdminPassword(username: string): Promise<AdminPasswordReset | undefined> {
      const admin = (await users.findByUsername(username)) ?? (await users.list()).find((user) => user.role === "admin");
      if (!admin) return undefined;
      const password = generatePassword();
      await users.updatePassword(admin.id, await Bun.password.hash(password, "argon2id"), clock());
      const ended = await users.deleteSessionsOf(admin.id);
      return { username: admin.username, password, disabled: admin.disabled_at !== null, console_sessions_ended: ended };
    },

    async createToken(caller: Principal, body: CreateTokenBody): Promise<CreatedToken> {
      const now = clock();
      const token = `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
      const row: TokenRow = {
        id: newId(),
        user_id: caller.id,
        name: body.name,
        token_digest: digestToken(token),
        expires_at: body.expires_in_days ? now + body.expires_in_days * DAY_MS : null,
        created_at: now,
      };
      if (!(await users.insertToken(row, maxTokensPerUser))) {
        throw new Conflict(
          `You have ${maxTokensPerUser} API tokens, the most a user may have (AUTH__MAX_TOKENS_PER_USER): revoke one first`,
        );
      }
      return { ...tokenView(row), token };
    },

    listTokens: async (caller: Principal) => ({ items: (await users.listTokens(caller.id)).map(tokenView) }),

    async deleteToken(caller: Principal, id: string): Promise<void> {
      if (!(await users.deleteToken(caller.id, id))) throw new NotFound(`No API token ${id}`);
    },
  };
}
export type UserService = ReturnType<typeof createUserService>;
