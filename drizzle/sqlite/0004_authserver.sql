CREATE TABLE `as_clients` (
	`client_id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`metadata` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	`last_used_at` integer
);
--> statement-breakpoint
CREATE TABLE `as_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`client_id` text NOT NULL,
	`connector_id` text NOT NULL,
	`scope` text,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`connector_id`) REFERENCES `connectors`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `as_grants_user_idx` ON `as_grants` (`user_id`);--> statement-breakpoint
CREATE TABLE `as_requests` (
	`handle_digest` text PRIMARY KEY NOT NULL,
	`params` text NOT NULL,
	`user_id` text,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `as_tokens` (
	`digest` text PRIMARY KEY NOT NULL,
	`grant_id` text NOT NULL,
	`kind` text NOT NULL,
	`code_challenge` text,
	`redirect_uri` text,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`grant_id`) REFERENCES `as_grants`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `as_tokens_grant_idx` ON `as_tokens` (`grant_id`);--> statement-breakpoint
CREATE INDEX `as_tokens_expires_idx` ON `as_tokens` (`expires_at`);