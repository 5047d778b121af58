CREATE TABLE "virtual_session_members" (
	"session_id" text NOT NULL,
	"connector_id" text NOT NULL,
	"upstream_session" text,
	"protocol_version" text,
	"capabilities" text,
	CONSTRAINT "virtual_session_members_session_id_connector_id_pk" PRIMARY KEY("session_id","connector_id")
);
--> statement-breakpoint
CREATE TABLE "virtual_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"virtual_server_id" text NOT NULL,
	"user_id" text NOT NULL,
	"protocol_version" text NOT NULL,
	"capabilities" text NOT NULL,
	"created_at" bigint NOT NULL,
	"used_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "virtual_session_members" ADD CONSTRAINT "virtual_session_members_session_id_virtual_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."virtual_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "virtual_session_members" ADD CONSTRAINT "virtual_session_members_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "virtual_sessions" ADD CONSTRAINT "virtual_sessions_virtual_server_id_virtual_servers_id_fk" FOREIGN KEY ("virtual_server_id") REFERENCES "public"."virtual_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "virtual_sessions" ADD CONSTRAINT "virtual_sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "virtual_sessions_used_idx" ON "virtual_sessions" USING btree ("used_at");