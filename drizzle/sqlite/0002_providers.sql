CREATE TABLE `providers` (
	`id` text PRIMARY KEY NOT NULL,
	`agent_card_url` text,
	`card` text NOT NULL,
	`refreshed_at` integer NOT NULL,
	`refresh_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
