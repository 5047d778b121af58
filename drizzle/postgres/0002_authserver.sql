CREATE TABLE "as_clients" (
	"client_id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"metadata" jsonb NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint,
	"last_used_at" bigint
);
--> statement-breakpoint
CREATE TABLE "as_grants" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"client_id" text NOT NULL,
	"connector_id" text NOT NULL,
	"scope" text,
	"created_at" bigint NOT NULL,
	"last_used_at" bigint
);
--> statement-breakpoint
CREATE TABLE "as_requests" (
	"handle_digest" text PRIMARY KEY NOT NULL,
	"params" jsonb NOT NULL,
	"user_id" text,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "as_tokens" (
	"digest" text PRIMARY KEY NOT NULL,
	"grant_id" text NOT NULL,
	"kind" text NOT NULL,
	"code_challenge" text,
	"redirect_uri" text,
	"expires_at" bigint NOT NULL,
	"used_at" bigint,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "as_grants" ADD CONSTRAINT "as_grants_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "as_grants" ADD CONSTRAINT "as_grants_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "as_requests" ADD CONSTRAINT "as_requests_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "as_tokens" ADD CONSTRAINT "as_tokens_grant_id_as_grants_id_fk" FOREIGN KEY ("grant_id") REFERENCES "public"."as_grants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "as_grants_user_idx" ON "as_grants" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "as_tokens_grant_idx" ON "as_tokens" USING btree ("grant_id");--> statement-breakpoint
CREATE INDEX "as_tokens_expires_idx" ON "as_tokens" USING btree ("expires_at");