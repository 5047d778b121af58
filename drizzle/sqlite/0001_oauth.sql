CREATE TABLE `oauth_clients` (
	`issuer` text NOT NULL,
	`redirect_uri` text NOT NULL,
	`client_id` text NOT NULL,
	`client_secret` text,
	`token_endpoint_auth_method` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`issuer`, `redirect_uri`)
);
--> statement-breakpoint
CREATE TABLE `oauth_grants` (
	`connector_id` text PRIMARY KEY NOT NULL,
	`context` text NOT NULL,
	`secrets` text NOT NULL,
	`expires_at` integer,
	`refresh_at` integer,
	`failures` integer DEFAULT 0 NOT NULL,
	`lease_owner` text,
	`lease_until` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`connector_id`) REFERENCES `connectors`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `oauth_grants_refresh_idx` ON `oauth_grants` (`refresh_at`);--> statement-breakpoint
CREATE TABLE `oauth_states` (
	`state_digest` text PRIMARY KEY NOT NULL,
	`connector_id` text NOT NULL,
	`secrets` text NOT NULL,
	`context` text NOT NULL,
	`expires_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`connector_id`) REFERENCES `connectors`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `oauth_states_expires_idx` ON `oauth_states` (`expires_at`);--> statement-breakpoint
ALTER TABLE `connectors` ADD `auth_method` text DEFAULT 'none' NOT NULL;