CREATE TABLE `connector_tools` (
	`connector_id` text NOT NULL,
	`name` text NOT NULL,
	`digest` text NOT NULL,
	`approved_digest` text,
	`first_seen_at` integer NOT NULL,
	`changed_at` integer,
	PRIMARY KEY(`connector_id`, `name`),
	FOREIGN KEY (`connector_id`) REFERENCES `connectors`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `connectors` ADD `tools_pinned_at` integer;--> statement-breakpoint
ALTER TABLE `connectors` ADD `tool_changes` text;