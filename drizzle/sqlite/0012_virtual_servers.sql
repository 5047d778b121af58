CREATE TABLE `virtual_server_members` (
	`virtual_server_id` text NOT NULL,
	`connector_id` text NOT NULL,
	`position` integer NOT NULL,
	`prefix` text NOT NULL,
	PRIMARY KEY(`virtual_server_id`, `connector_id`),
	FOREIGN KEY (`virtual_server_id`) REFERENCES `virtual_servers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`connector_id`) REFERENCES `connectors`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `virtual_server_members_prefix_idx` ON `virtual_server_members` (`virtual_server_id`,`prefix`);--> statement-breakpoint
CREATE INDEX `virtual_server_members_connector_idx` ON `virtual_server_members` (`connector_id`);--> statement-breakpoint
CREATE TABLE `virtual_servers` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`failure_mode` text NOT NULL,
	`tool_mode` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `virtual_servers_owner_created_idx` ON `virtual_servers` (`owner_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `virtual_servers_created_idx` ON `virtual_servers` (`created_at`,`id`);