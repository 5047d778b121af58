ALTER TABLE `connector_tools` ADD `definition` text;--> statement-breakpoint
ALTER TABLE `connector_tools` ADD `approved_definition` text;