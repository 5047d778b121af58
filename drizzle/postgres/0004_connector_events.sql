CREATE TABLE "connector_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"connector_id" text NOT NULL,
	"owner_id" text NOT NULL,
	"data" jsonb NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "connector_events_created_idx" ON "connector_events" USING btree ("created_at");