ALTER TABLE "as_grants" ALTER COLUMN "connector_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "as_grants" ADD COLUMN "virtual_server_id" text;--> statement-breakpoint
ALTER TABLE "as_grants" ADD CONSTRAINT "as_grants_virtual_server_id_virtual_servers_id_fk" FOREIGN KEY ("virtual_server_id") REFERENCES "public"."virtual_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "as_grants" ADD CONSTRAINT "as_grants_one_resource" CHECK ((connector_id IS NULL) <> (virtual_server_id IS NULL));