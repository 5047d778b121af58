CREATE TABLE `virtual_session_members` (
	`session_id` text NOT NULL,
	`connector_id` text NOT NULL,
	`upstream_session` text,
	`protocol_version` text,
	`capabilities` text,
	PRIMARY KEY(`session_id`, `connector_id`),
	FOREIGN KEY (`session_id`) REFERENCES `virtual_sessions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`connector_id`) REFERENCES `connectors`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `virtual_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`virtual_server_id` text NOT NULL,
	`user_id` text NOT NULL,
	`protocol_version` text NOT NULL,
	`capabilities` text NOT NULL,
	`created_at` integer NOT NULL,
	`used_at` integer NOT NULL,
	FOREIGN KEY (`virtual_server_id`) REFERENCES `virtual_servers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `virtual_sessions_used_idx` ON `virtual_sessions` (`used_at`);