CREATE TABLE `webhook_cursors` (
	`url` text PRIMARY KEY NOT NULL,
	`last_event_id` integer NOT NULL,
	`attempts` integer NOT NULL,
	`next_attempt_at` integer NOT NULL
);
