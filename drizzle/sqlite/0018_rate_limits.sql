CREATE TABLE `rate_buckets` (
	`key` text PRIMARY KEY NOT NULL,
	`tat` real NOT NULL
);
--> statement-breakpoint
ALTER TABLE `connectors` ADD `rate_limits` text;--> statement-breakpoint
ALTER TABLE `users` ADD `requests_per_minute` integer;