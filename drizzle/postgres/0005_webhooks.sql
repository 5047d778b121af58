CREATE TABLE "webhook_cursors" (
	"url" text PRIMARY KEY NOT NULL,
	"last_event_id" bigint NOT NULL,
	"attempts" bigint NOT NULL,
	"next_attempt_at" bigint NOT NULL
);
