CREATE TABLE "rate_buckets" (
	"key" text PRIMARY KEY NOT NULL,
	"tat" double precision NOT NULL
);
--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "rate_limits" jsonb;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "requests_per_minute" integer;