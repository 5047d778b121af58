CREATE TABLE "providers" (
	"id" text PRIMARY KEY NOT NULL,
	"agent_card_url" text,
	"card" jsonb NOT NULL,
	"refreshed_at" bigint NOT NULL,
	"refresh_error" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "connectors" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"url" text NOT NULL,
	"state" text NOT NULL,
	"auth_method" text DEFAULT 'none' NOT NULL,
	"disconnect_reason" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"preset_url" text,
	"client_id" text,
	"client_secret" text,
	"headers" text,
	"header_names" jsonb,
	"access_token" text,
	"authorization_url" text,
	"redirect_url" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_clients" (
	"issuer" text NOT NULL,
	"redirect_uri" text NOT NULL,
	"client_id" text NOT NULL,
	"client_secret" text,
	"token_endpoint_auth_method" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "oauth_clients_issuer_redirect_uri_pk" PRIMARY KEY("issuer","redirect_uri")
);
--> statement-breakpoint
CREATE TABLE "oauth_grants" (
	"connector_id" text PRIMARY KEY NOT NULL,
	"context" jsonb NOT NULL,
	"secrets" text NOT NULL,
	"expires_at" bigint,
	"refresh_at" bigint,
	"failures" integer DEFAULT 0 NOT NULL,
	"lease_owner" text,
	"lease_until" bigint,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_states" (
	"state_digest" text PRIMARY KEY NOT NULL,
	"connector_id" text NOT NULL,
	"secrets" text NOT NULL,
	"context" jsonb NOT NULL,
	"expires_at" bigint NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"token_digest" text NOT NULL,
	"expires_at" bigint,
	"created_at" bigint NOT NULL,
	CONSTRAINT "api_tokens_token_digest_unique" UNIQUE("token_digest")
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"username" text NOT NULL,
	"password_hash" text NOT NULL,
	"role" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "users_username_unique" UNIQUE("username")
);
--> statement-breakpoint
ALTER TABLE "connectors" ADD CONSTRAINT "connectors_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_grants" ADD CONSTRAINT "oauth_grants_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_states" ADD CONSTRAINT "oauth_states_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "connectors_owner_created_idx" ON "connectors" USING btree ("owner_id","created_at","id");--> statement-breakpoint
CREATE INDEX "connectors_created_idx" ON "connectors" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "oauth_grants_refresh_idx" ON "oauth_grants" USING btree ("refresh_at");--> statement-breakpoint
CREATE INDEX "oauth_states_expires_idx" ON "oauth_states" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "api_tokens_user_idx" ON "api_tokens" USING btree ("user_id");