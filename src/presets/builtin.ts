import type { Preset } from "./model";

export const DEMO_PRESET_URL = "mcp+stdio://demo";

/**
 * How the runtime runs this program (config/load.ts decides): locally the running executable itself, so the demo
 * needs nothing but the binary; on Kubernetes the service's image, where the program is on PATH.
 */
export type OwnProgram = { image: string; command: string[] };

/**
 * The demo server (cli/demo-server.ts) as a managed connector: the first in the list, so a newcomer's first connector
 * works offline with no account or sign-in.
 */
export const demoPreset = (own: OwnProgram): Preset => ({
  url: DEMO_PRESET_URL,
  metadata: {
    name: "Demo server — works offline, no sign-in",
    description:
      "Built into connector-service: tools echo, add, countdown (progress) and ask (asks you a question), a prompt and a resource. Try a tool call with nothing else installed.",
  },
  stdio: { image: own.image, command: [...own.command, "demo-server"] },
});

/** The built-in catalog (docs/interface.md §4.2); CONNECTOR__PRESETS replaces it as a whole. */
export const builtinPresets = (own: OwnProgram): Preset[] => [demoPreset(own), ...REMOTE_PRESETS];

const REMOTE_PRESETS: readonly Preset[] = [
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
