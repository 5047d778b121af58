CREATE TABLE "legacy_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"connector_id" text NOT NULL,
	"user_id" text NOT NULL,
	"owner" text NOT NULL,
	"init" text NOT NULL,
	"log_level" text,
	"created_at" bigint NOT NULL,
	"used_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "legacy_sessions" ADD CONSTRAINT "legacy_sessions_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "legacy_sessions" ADD CONSTRAINT "legacy_sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "legacy_sessions_used_idx" ON "legacy_sessions" USING btree ("used_at");--> statement-breakpoint
CREATE INDEX "legacy_sessions_user_idx" ON "legacy_sessions" USING btree ("user_id");