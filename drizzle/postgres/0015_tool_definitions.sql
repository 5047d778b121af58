ALTER TABLE "connector_tools" ADD COLUMN "definition" jsonb;--> statement-breakpoint
ALTER TABLE "connector_tools" ADD COLUMN "approved_definition" jsonb;