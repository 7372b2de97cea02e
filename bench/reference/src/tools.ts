// The tools every TypeScript peer of `npm run bench` serves (the in-memory reference and the
// `agents` anchors), registered the same way on each, so their answers are byte-identical to one
// another and, as the bench checks before measuring, to ours. The SDK v1 `McpServer` takes a tool's
// schema as a bare field shape, v2's (`@modelcontextprotocol/server`, under `createMcpHandler`) as a
// `z.object`: `object` turns the shape into what the server at hand takes.
import { z } from "zod";
import { tripConfirmation } from "./trip.js";

export type Mode = "mobile-mode" | "interactive-mode";

const MODES: Record<Mode, { indicator: string; description: string }> = {
  "mobile-mode": {
    indicator: "📱 MOBILE MODE",
    description: "Short replies (at most a few lines), one question at a time, no tables: suited to WhatsApp, Telegram, SMS and phone follow-ups.",
  },
  "interactive-mode": {
    indicator: "💻 INTERACTIVE MODE",
    description: "Detailed, structured replies with options, tables and full itineraries: suited to desktop planning sessions.",
  },
};

type Shape = Record<string, z.ZodType>;

/**
 * Registers get_mode_indicator and process_template on `s`; `session` holds the caller's mode.
 * `object` wraps each schema's field shape: as is for the SDK v1 server, `z.object` for v2's.
 */
export function registerTools<S extends { registerTool: (...args: any[]) => unknown }>(s: S, session: { mode: Mode }, object: (shape: Shape) => unknown = (shape) => shape): S {
  s.registerTool(
    "get_mode_indicator",
    {
      title: "Get mode indicator",
      description: "Return the session's current working mode and the indicator line to show at the top of replies.",
      inputSchema: object({}),
      outputSchema: object({ mode: z.enum(["mobile-mode", "interactive-mode"]), indicator: z.string(), description: z.string() }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async () => {
      const { indicator, description } = MODES[session.mode];
      const out = { description, indicator, mode: session.mode };
      return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out };
    },
  );
  s.registerTool(
    "process_template",
    {
      title: "Process template",
      description: "Render a stored template with variables into text, markdown or html.",
      inputSchema: object({
        template_name: z.string().min(3).max(50).regex(/^[a-zA-Z0-9\-_]+$/),
        variables: z.record(z.string(), z.unknown()),
        processing_options: z
          .object({
            output_format: z.enum(["text", "html", "markdown"]).optional(),
            validate_variables: z.boolean().optional(),
            apply_security: z.boolean().optional(),
            use_cache: z.boolean().optional(),
            include_metadata: z.boolean().optional(),
            fallback_content: z.string().max(10000).optional(),
          })
          .strict()
          .optional(),
        context_data: z.object({ session_info: z.object({ session_id: z.string().optional() }).optional() }).optional(),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ template_name, variables, processing_options, context_data }) => {
      if (template_name !== "trip-confirmation-comprehensive") {
        return { isError: true, content: [{ type: "text", text: `Template '${template_name}' not found. Available templates: trip-confirmation-comprehensive` }] };
      }
      const { text, missing } = tripConfirmation(variables, { sessionId: context_data?.session_info?.session_id ?? "", today: new Date() });
      const out = {
        fallback_used: false,
        missing_variables: missing,
        output_format: processing_options?.output_format ?? "text",
        text,
        warnings: missing.map((path) => `missing value for ${path}: rendered empty. Provide it in variables, or set processing_options.strict: true to make a missing value an error`),
      };
      return { content: [{ type: "text", text }, { type: "text", text: JSON.stringify(out) }], structuredContent: out };
    },
  );
  return s;
}

