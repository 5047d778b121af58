CREATE TABLE "parked_handoffs" (
	"id" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"bridge" text NOT NULL,
	"message" text NOT NULL,
	"answer" text,
	"created_at" bigint NOT NULL,
	"taken_at" bigint,
	"abandoned_at" bigint
);
--> statement-breakpoint
CREATE INDEX "parked_handoffs_holder_idx" ON "parked_handoffs" USING btree ("holder","taken_at");--> statement-breakpoint
CREATE INDEX "parked_handoffs_created_idx" ON "parked_handoffs" USING btree ("created_at");