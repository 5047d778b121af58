CREATE TABLE "virtual_server_members" (
	"virtual_server_id" text NOT NULL,
	"connector_id" text NOT NULL,
	"position" integer NOT NULL,
	"prefix" text NOT NULL,
	CONSTRAINT "virtual_server_members_virtual_server_id_connector_id_pk" PRIMARY KEY("virtual_server_id","connector_id")
);
--> statement-breakpoint
CREATE TABLE "virtual_servers" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"failure_mode" text NOT NULL,
	"tool_mode" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "virtual_server_members" ADD CONSTRAINT "virtual_server_members_virtual_server_id_virtual_servers_id_fk" FOREIGN KEY ("virtual_server_id") REFERENCES "public"."virtual_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "virtual_server_members" ADD CONSTRAINT "virtual_server_members_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "virtual_servers" ADD CONSTRAINT "virtual_servers_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "virtual_server_members_prefix_idx" ON "virtual_server_members" USING btree ("virtual_server_id","prefix");--> statement-breakpoint
CREATE INDEX "virtual_server_members_connector_idx" ON "virtual_server_members" USING btree ("connector_id");--> statement-breakpoint
CREATE INDEX "virtual_servers_owner_created_idx" ON "virtual_servers" USING btree ("owner_id","created_at","id");--> statement-breakpoint
CREATE INDEX "virtual_servers_created_idx" ON "virtual_servers" USING btree ("created_at","id");