-- Grants may be for a virtual server's MCP URL: connector_id becomes nullable, beside virtual_server_id. SQLite
-- changes a column only by rebuilding its table, and migrations run in one transaction with foreign keys on (where
-- PRAGMA foreign_keys is a no-op): dropping as_grants while as_tokens refers to it would delete every token by
-- cascade. So as_tokens is rebuilt too, referring to the new grants table, and the old tables go tokens first.
CREATE TABLE `__new_as_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`client_id` text NOT NULL,
	`connector_id` text,
	`virtual_server_id` text,
	`scope` text,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`connector_id`) REFERENCES `connectors`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`virtual_server_id`) REFERENCES `virtual_servers`(`id`) ON UPDATE no action ON DELETE cascade,
	CONSTRAINT "as_grants_one_resource" CHECK((connector_id IS NULL) <> (virtual_server_id IS NULL))
);
--> statement-breakpoint
INSERT INTO `__new_as_grants`("id", "user_id", "client_id", "connector_id", "virtual_server_id", "scope", "created_at", "last_used_at") SELECT "id", "user_id", "client_id", "connector_id", NULL, "scope", "created_at", "last_used_at" FROM `as_grants`;--> statement-breakpoint
CREATE TABLE `__new_as_tokens` (
	`digest` text PRIMARY KEY NOT NULL,
	`grant_id` text NOT NULL,
	`kind` text NOT NULL,
	`code_challenge` text,
	`redirect_uri` text,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`grant_id`) REFERENCES `__new_as_grants`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_as_tokens`("digest", "grant_id", "kind", "code_challenge", "redirect_uri", "expires_at", "used_at", "created_at") SELECT "digest", "grant_id", "kind", "code_challenge", "redirect_uri", "expires_at", "used_at", "created_at" FROM `as_tokens`;--> statement-breakpoint
DROP TABLE `as_tokens`;--> statement-breakpoint
DROP TABLE `as_grants`;--> statement-breakpoint
ALTER TABLE `__new_as_grants` RENAME TO `as_grants`;--> statement-breakpoint
ALTER TABLE `__new_as_tokens` RENAME TO `as_tokens`;--> statement-breakpoint
CREATE INDEX `as_grants_user_idx` ON `as_grants` (`user_id`);--> statement-breakpoint
CREATE INDEX `as_tokens_grant_idx` ON `as_tokens` (`grant_id`);--> statement-breakpoint
CREATE INDEX `as_tokens_expires_idx` ON `as_tokens` (`expires_at`);
