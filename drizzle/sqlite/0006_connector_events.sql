CREATE TABLE `connector_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`type` text NOT NULL,
	`connector_id` text NOT NULL,
	`owner_id` text NOT NULL,
	`data` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `connector_events_created_idx` ON `connector_events` (`created_at`);