CREATE TABLE "connector_tools" (
	"connector_id" text NOT NULL,
	"name" text NOT NULL,
	"digest" text NOT NULL,
	"approved_digest" text,
	"first_seen_at" bigint NOT NULL,
	"changed_at" bigint,
	CONSTRAINT "connector_tools_connector_id_name_pk" PRIMARY KEY("connector_id","name")
);
--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "tools_pinned_at" bigint;--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "tool_changes" jsonb;--> statement-breakpoint
ALTER TABLE "connector_tools" ADD CONSTRAINT "connector_tools_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;