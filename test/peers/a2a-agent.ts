import type { AgentCard, Message, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";

export type A2AAgentHandler = {
  url: string;
  cardUrl: string;
  card: AgentCard;
  /** Headers of every JSON-RPC request that reached the agent. */
  requests: Headers[];
  handler(request: Request): Promise<Response>;
};
export type A2AAgent = Omit<A2AAgentHandler, "handler"> & { stop(): Promise<void> };

/**
 * A small A2A 0.3 agent built with @a2a-js/sdk's own server side, at `origin`: it echoes the text it is sent,
 * and for message/stream publishes "working" updates 150 ms apart before the final answer. Its card is at
 * /.well-known/agent-card.json, its JSON-RPC endpoint at /a2a.
 */
export function a2aAgent(origin: string, extraCard: Partial<AgentCard> = {}): A2AAgentHandler {
  const requests: Headers[] = [];
  const executor: AgentExecutor = {
    async execute(context: RequestContext, bus: ExecutionEventBus) {
      const text = context.userMessage.parts.map((p) => (p.kind === "text" ? p.text : "")).join("");
      if (text.startsWith("stream:")) {
        bus.publish({
          kind: "task",
          id: context.taskId,
          contextId: context.contextId,
          status: { state: "submitted" },
          history: [context.userMessage],
        });
        for (let step = 1; step <= 3; step++) {
          const update: TaskStatusUpdateEvent = {
            kind: "status-update",
            taskId: context.taskId,
            contextId: context.contextId,
            status: {
              state: "working",
              message: {
                kind: "message",
                role: "agent",
                messageId: crypto.randomUUID(),
                parts: [{ kind: "text", text: `step ${step}` }],
              },
            },
            final: false,
          };
          bus.publish(update);
          await Bun.sleep(150);
        }
        bus.publish({
          kind: "status-update",
          taskId: context.taskId,
          contextId: context.contextId,
          status: {
            state: "completed",
            message: {
              kind: "message",
              role: "agent",
              messageId: crypto.randomUUID(),
              parts: [{ kind: "text", text: `done: ${text}` }],
            },
          },
          final: true,
        });
      } else {
        const reply: Message = {
          kind: "message",
          role: "agent",
          messageId: crypto.randomUUID(),
          contextId: context.contextId,
          parts: [{ kind: "text", text: `echo: ${text}` }],
        };
        bus.publish(reply);
      }
      bus.finished();
    },
    async cancelTask() {},
  };
  const url = `${origin}/a2a`;
  const card: AgentCard = {
    protocolVersion: "0.3.0",
    name: "Echo agent",
    description: "Echoes what it is told",
    url,
    preferredTransport: "JSONRPC",
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "Echo", description: "Repeats the message", tags: ["echo", "test"], examples: ["hello"] }],
    securitySchemes: { agentKey: { type: "apiKey", in: "header", name: "X-Agent-Key" } },
    security: [{ agentKey: [] }],
    ...extraCard,
  };
  const transport = new JsonRpcTransportHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), executor));
  return {
    url,
    cardUrl: `${origin}/.well-known/agent-card.json`,
    card,
    requests,
    async handler(request: Request): Promise<Response> {
      const { pathname } = new URL(request.url);
      if (pathname === "/.well-known/agent-card.json") return Response.json(card);
      if (pathname !== "/a2a" || request.method !== "POST") return new Response("not found", { status: 404 });
      requests.push(request.headers);
      const result = await transport.handle(await request.json());
      if (Symbol.asyncIterator in (result as object)) {
        const events = result as AsyncGenerator<unknown>;
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            const next = await events.next();
            if (next.done) controller.close();
            else controller.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(next.value)}\n\n`));
          },
        });
        return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
      }
      return Response.json(result);
    },
  };
}

/** The same agent on a loopback port, for the end-to-end tests. */
export function startA2AAgent(extraCard: Partial<AgentCard> = {}): A2AAgent {
  let agent: A2AAgentHandler | undefined;
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => agent!.handler(request) });
  agent = a2aAgent(`http://127.0.0.1:${server.port}`, extraCard);
  const { handler: _, ...rest } = agent;
  return { ...rest, stop: () => server.stop(true) };
}
