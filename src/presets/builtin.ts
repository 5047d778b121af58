import type { Preset } from "./model";

/** The built-in catalog (docs/interface.md §4.2); CONNECTOR__PRESETS replaces it as a whole. */
export const BUILTIN_PRESETS: readonly Preset[] = [
  {
    url: "https://mcp.stripe.com",
    metadata: {
      name: "Stripe",
      description: "Payment processing: customers, payments, invoices, subscriptions and the Stripe knowledge base.",
    },
  },
  {
    url: "https://mcp.box.com",
    metadata: {
      name: "Box",
      description: "Content storage and search: find, read and organise files and folders stored in Box.",
    },
  },
  {
    url: "https://api.githubcopilot.com/mcp",
    metadata: {
      name: "GitHub",
      description: "Code hosting and code intelligence: repositories, issues, pull requests, code search and Actions.",
    },
  },
];
