CREATE TABLE `legacy_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`connector_id` text NOT NULL,
	`user_id` text NOT NULL,
	`owner` text NOT NULL,
	`init` text NOT NULL,
	`log_level` text,
	`created_at` integer NOT NULL,
	`used_at` integer NOT NULL,
	FOREIGN KEY (`connector_id`) REFERENCES `connectors`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `legacy_sessions_used_idx` ON `legacy_sessions` (`used_at`);--> statement-breakpoint
CREATE INDEX `legacy_sessions_user_idx` ON `legacy_sessions` (`user_id`);