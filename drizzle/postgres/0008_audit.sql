CREATE TABLE "audit_records" (
	"id" text PRIMARY KEY NOT NULL,
	"at" bigint NOT NULL,
	"user_id" text NOT NULL,
	"credential" text,
	"connector_id" text NOT NULL,
	"method" text,
	"name" text,
	"outcome" text NOT NULL,
	"error_code" integer,
	"http_status" integer NOT NULL,
	"duration_ms" integer NOT NULL,
	"request_bytes" bigint NOT NULL,
	"response_bytes" bigint NOT NULL,
	"captured" text
);
--> statement-breakpoint
CREATE INDEX "audit_at_idx" ON "audit_records" USING btree ("at");--> statement-breakpoint
CREATE INDEX "audit_connector_idx" ON "audit_records" USING btree ("connector_id","id");--> statement-breakpoint
CREATE INDEX "audit_user_idx" ON "audit_records" USING btree ("user_id","id");