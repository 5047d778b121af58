// "Try it": a connected connector's tools, prompts and resources, and a tool call from a form generated from the
// tool's input schema (or raw JSON arguments), through the connector's proxy URL (mcp.js) — the same admission,
// policy and audit as any MCP client.
import { McpError, McpSession } from "./mcp.js";
import { announce, h, hidden, openDialog, uid } from "./dom.js";

/** The first JSON Schema type of a property, `null` set aside (`["string", "null"]` is a string that may be left out). */
function typeOf(schema) {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (Array.isArray(schema.enum) && schema.enum.length) return "enum";
  return typeof type === "string" ? type : "json";
}

const json = (value) => JSON.stringify(value, null, 2);

/**
 * One field of the form for property `name`: its element, and `read()`, which gives `{ value }` to send, `{}` to leave
 * it out, or throws an Error naming the field. Strings, numbers, integers, booleans and enums get their own controls;
 * anything else (objects, arrays) is typed as JSON.
 */
function fieldFor(name, schema, required) {
  const id = uid("arg");
  const hintId = uid("arg-hint");
  const type = typeOf(schema);
  const label = h("label", { for: id }, name, required ? h("span", { class: "required" }, " (required)") : null);
  const hint = schema.description ? h("p", { class: "hint", id: hintId }, schema.description) : null;
  const common = { id, name, "data-arg": name, "aria-describedby": hint ? hintId : undefined, required: required || undefined };
  const hasDefault = schema.default !== undefined;
  let control;
  let read;
  if (type === "enum") {
    control = h(
      "select",
      common,
      h("option", { value: "" }, required ? "Choose…" : "(not set)"),
      schema.enum.map((v, i) => h("option", { value: String(i) }, String(v))),
    );
    if (hasDefault) control.value = String(schema.enum.findIndex((v) => v === schema.default));
    read = () => {
      if (control.value === "" || control.value === "-1") return missing();
      return { value: schema.enum[Number(control.value)] };
    };
  } else if (type === "boolean") {
    control = h(
      "select",
      common,
      h("option", { value: "" }, "(not set)"),
      h("option", { value: "true" }, "true"),
      h("option", { value: "false" }, "false"),
    );
    if (hasDefault) control.value = String(Boolean(schema.default));
    read = () => (control.value === "" ? missing() : { value: control.value === "true" });
  } else if (type === "number" || type === "integer") {
    control = h("input", {
      ...common,
      type: "number",
      inputmode: type === "integer" ? "numeric" : "decimal",
      step: type === "integer" ? "1" : "any",
      min: schema.minimum,
      max: schema.maximum,
    });
    if (hasDefault) control.value = String(schema.default);
    read = () => {
      if (control.value.trim() === "") return missing();
      const value = Number(control.value);
      if (!Number.isFinite(value)) throw new Error(`${name} must be a number.`);
      if (type === "integer" && !Number.isInteger(value)) throw new Error(`${name} must be a whole number.`);
      return { value };
    };
  } else if (type === "string") {
    control = h("input", { ...common, type: "text", autocomplete: "off", spellcheck: "false", maxlength: schema.maxLength });
    if (hasDefault) control.value = String(schema.default);
    read = () => (control.value === "" ? missing() : { value: control.value });
  } else {
    control = h("textarea", { ...common, spellcheck: "false", rows: "3", placeholder: type === "array" ? "[]" : "{}" });
    if (hasDefault) control.value = json(schema.default);
    read = () => {
      if (control.value.trim() === "") return missing();
      try {
        return { value: JSON.parse(control.value) };
      } catch {
        throw new Error(`${name} must be JSON.`);
      }
    };
  }
  function missing() {
    if (required) throw new Error(`${name} is required.`);
    return {};
  }
  return { element: h("div", { class: "field" }, label, control, hint), read, control };
}

/** A tool's arguments form, from its `inputSchema` (an object schema: `properties` and `required`). */
function argumentsForm(tool) {
  const schema = tool.inputSchema && typeof tool.inputSchema === "object" ? tool.inputSchema : {};
  const properties = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = Object.entries(properties).map(([name, property]) => [
    name,
    fieldFor(name, property && typeof property === "object" ? property : {}, required.has(name)),
  ]);
  return {
    element: fields.length ? fields.map(([, f]) => f.element) : h("p", { class: "muted" }, "This tool takes no arguments."),
    read() {
      const args = {};
      for (const [name, field] of fields) {
        const { value } = field.read();
        if (value !== undefined) args[name] = value;
      }
      return args;
    },
    focus: () => fields[0] && fields[0][1].control.focus(),
  };
}

/** One content block of a tool result, prompt or resource (MCP 2025-11-25, Server Features › Tools › Tool Result). */
function contentBlock(block) {
  if (!block || typeof block !== "object") return h("pre", { class: "code" }, json(block));
  if (block.type === "text") return h("pre", { class: "code", "data-result-text": true }, block.text);
  if (block.type === "image" && typeof block.data === "string" && /^image\/[\w.+-]+$/.test(block.mimeType || ""))
    return h("img", {
      class: "result-image",
      src: `data:${block.mimeType};base64,${block.data}`,
      alt: "An image the tool returned",
    });
  if (block.type === "resource_link")
    return h("p", {}, "Resource link: ", h("code", {}, block.uri), block.name ? ` (${block.name})` : "");
  if (block.type === "resource" && block.resource) {
    const r = block.resource;
    return h(
      "div",
      {},
      h("p", {}, "Resource ", h("code", {}, r.uri)),
      typeof r.text === "string" ? h("pre", { class: "code" }, r.text) : null,
    );
  }
  return h("pre", { class: "code" }, json(block));
}

function errorView(error) {
  const code = error instanceof McpError && typeof error.code === "number" ? `JSON-RPC error ${error.code}: ` : "";
  return h(
    "div",
    { class: "result bad", "data-result": "error" },
    h("h3", {}, "Error"),
    h("p", { "data-error-message": true }, `${code}${error.message}`),
    error.data !== undefined ? h("pre", { class: "code" }, json(error.data)) : null,
  );
}

/**
 * Opens "Try it" for connector `c` at `proxyPath` (same origin: the session cookie goes by itself, scoped to the name
 * the console was opened at). `onTools(names)` learns the tools (the client configurations use the first).
 */
export function openTryIt(c, name, proxyPath, { onTools } = {}) {
  const session = new McpSession(proxyPath);
  let running = null;
  const ids = { tool: uid("tool"), raw: uid("raw"), rawArgs: uid("raw-args") };
  const status = h("p", { class: "muted", "data-tryit-status": true }, "Connecting…");
  const toolSelect = h("select", { id: ids.tool, "data-tool-select": true, disabled: true });
  const description = h("p", { class: "hint" });
  const formArea = h("div", { class: "stack" });
  const rawToggle = h("input", { type: "checkbox", id: ids.raw, "data-raw-toggle": true });
  const rawArea = h("textarea", { id: ids.rawArgs, spellcheck: "false", rows: "6", "data-raw-args": true });
  const rawField = h(
    "div",
    { class: "field", hidden: true },
    h("label", { for: ids.rawArgs }, "Arguments (JSON object)"),
    rawArea,
  );
  const callButton = h("button", { type: "submit", class: "button primary", disabled: true }, "Call tool");
  const cancelButton = h("button", { type: "button", class: "button", hidden: true }, "Cancel call");
  const output = h("div", { class: "tryit-output", "data-output": true, "aria-live": "polite" });
  const promptList = h("ul", { class: "plain", "data-prompts": true });
  const resourceList = h("ul", { class: "plain", "data-resources": true });
  const promptsSummary = h("summary", {}, "Prompts");
  const resourcesSummary = h("summary", {}, "Resources");
  let tools = [];
  let form = null;

  function showTool() {
    const tool = tools[Number(toolSelect.value)];
    if (!tool) return;
    description.textContent = tool.description || "";
    form = argumentsForm(tool);
    formArea.replaceChildren(...[form.element].flat());
    if (rawToggle.checked) rawArea.value = "{}";
  }

  rawToggle.addEventListener("change", () => {
    rawField.hidden = !rawToggle.checked;
    formArea.hidden = rawToggle.checked;
    if (rawToggle.checked) {
      let args = {};
      try {
        args = form ? form.read() : {};
      } catch {
        // A field not filled in yet: start from what is valid.
      }
      rawArea.value = json(args);
      rawArea.focus();
    }
  });
  toolSelect.addEventListener("change", showTool);

  function readArguments() {
    if (!rawToggle.checked) return form ? form.read() : {};
    let args;
    try {
      args = JSON.parse(rawArea.value || "{}");
    } catch {
      throw new Error("The arguments are not JSON.");
    }
    if (!args || typeof args !== "object" || Array.isArray(args)) throw new Error("The arguments must be a JSON object.");
    return args;
  }

  async function call(event) {
    event.preventDefault();
    const tool = tools[Number(toolSelect.value)];
    if (!tool || running) return;
    let args;
    try {
      args = readArguments();
    } catch (e) {
      output.replaceChildren(errorView(e));
      return;
    }
    const controller = new AbortController();
    const progress = h("progress", { "data-progress": true, "aria-label": `Progress of ${tool.name}` });
    const progressText = h("p", { class: "muted small", "data-progress-text": true }, "Waiting for the answer…");
    output.replaceChildren(h("div", { class: "result" }, progress, progressText));
    running = { controller, id: null };
    callButton.disabled = true;
    cancelButton.hidden = false;
    // MCP 2025-11-25, Base Protocol › Utilities › Progress: the request names a token in `_meta`; the server's
    // notifications/progress carry it back (on the request's event stream).
    const progressToken = `console-${Date.now()}`;
    const send = () =>
      session.request(
        "tools/call",
        { name: tool.name, arguments: args, _meta: { progressToken } },
        {
          signal: controller.signal,
          onId: (id) => running && (running.id = id),
          onProgress: (p) => {
            if (p.progressToken !== progressToken) return;
            if (typeof p.total === "number" && p.total > 0) {
              progress.max = p.total;
              progress.value = Math.min(p.progress, p.total);
            }
            progressText.textContent = `Progress: ${p.progress}${typeof p.total === "number" ? ` of ${p.total}` : ""}${p.message ? ` — ${p.message}` : ""}`;
          },
        },
      );
    try {
      let result;
      try {
        result = await send();
      } catch (e) {
        if (!(e instanceof McpError && e.code === "session-ended")) throw e;
        await session.open();
        result = await send();
      }
      output.replaceChildren(
        resultView(result, progressText.textContent.startsWith("Progress") ? progressText.textContent : null),
      );
      announce(result.isError ? `${tool.name} reported an error.` : `${tool.name} answered.`);
    } catch (e) {
      output.replaceChildren(errorView(e));
      announce(`${tool.name} failed: ${e.message}`);
    } finally {
      running = null;
      callButton.disabled = false;
      cancelButton.hidden = true;
    }
  }

  cancelButton.addEventListener("click", () => {
    if (!running) return;
    if (running.id !== null) session.cancel(running.id, "Cancelled in the console");
    running.controller.abort();
  });

  /** A tool's result; `lastProgress`, the last progress it reported, stays under the heading. */
  function resultView(result, lastProgress) {
    const blocks = Array.isArray(result.content) ? result.content : [];
    return h(
      "div",
      { class: `result${result.isError ? " bad" : ""}`, "data-result": result.isError ? "tool-error" : "ok" },
      h("h3", {}, result.isError ? "The tool reported an error" : "Result"),
      lastProgress ? h("p", { class: "muted small", "data-last-progress": true }, lastProgress) : null,
      blocks.map(contentBlock),
      result.structuredContent !== undefined
        ? [
            h("h4", {}, "Structured content"),
            h("pre", { class: "code", "data-structured": true }, json(result.structuredContent)),
          ]
        : null,
      !blocks.length && result.structuredContent === undefined ? h("pre", { class: "code" }, json(result)) : null,
    );
  }

  async function readResource(resource, button) {
    button.disabled = true;
    try {
      const result = await session.request("resources/read", { uri: resource.uri });
      const contents = Array.isArray(result.contents) ? result.contents : [];
      output.replaceChildren(
        h(
          "div",
          { class: "result", "data-result": "resource" },
          h("h3", {}, `Resource ${resource.name || resource.uri}`),
          contents.map((c) =>
            typeof c.text === "string"
              ? h("pre", { class: "code" }, c.text)
              : h("p", {}, `${c.mimeType || "binary"} content (${(c.blob || "").length} base64 characters)`),
          ),
        ),
      );
    } catch (e) {
      output.replaceChildren(errorView(e));
    } finally {
      button.disabled = false;
    }
  }

  async function load() {
    try {
      await session.open();
      const server = session.serverInfo
        ? `${session.serverInfo.name ?? "the server"} ${session.serverInfo.version ?? ""}`.trim()
        : "the server";
      const caps = session.capabilities;
      const [toolsList, prompts, resources] = await Promise.all([
        caps.tools ? session.list("tools/list", "tools") : [],
        caps.prompts ? session.list("prompts/list", "prompts").catch(() => []) : [],
        caps.resources ? session.list("resources/list", "resources").catch(() => []) : [],
      ]);
      tools = toolsList;
      if (onTools) onTools(tools.map((t) => t.name));
      status.textContent = `Connected to ${server} (MCP ${session.protocolVersion}). ${tools.length} tools, ${prompts.length} prompts, ${resources.length} resources.`;
      toolSelect.replaceChildren(...tools.map((t, i) => h("option", { value: String(i) }, t.title || t.name)));
      toolSelect.disabled = tools.length === 0;
      callButton.disabled = tools.length === 0;
      if (tools.length) showTool();
      else formArea.replaceChildren(h("p", { class: "muted" }, "This server offers no tools."));
      promptsSummary.textContent = `Prompts (${prompts.length})`;
      promptList.replaceChildren(
        ...prompts.map((p) =>
          h(
            "li",
            {},
            h("strong", {}, p.title || p.name),
            p.description ? ` — ${p.description}` : "",
            Array.isArray(p.arguments) && p.arguments.length
              ? h(
                  "span",
                  { class: "muted small" },
                  ` (arguments: ${p.arguments.map((a) => `${a.name}${a.required ? "*" : ""}`).join(", ")})`,
                )
              : null,
          ),
        ),
      );
      resourcesSummary.textContent = `Resources (${resources.length})`;
      resourceList.replaceChildren(
        ...resources.map((r) => {
          const read = h("button", { type: "button", class: "button small" }, "Read", hidden(` ${r.name || r.uri}`));
          read.addEventListener("click", () => readResource(r, read));
          return h("li", {}, h("strong", {}, r.title || r.name || r.uri), " ", h("code", {}, r.uri), " ", read);
        }),
      );
      announce(`Connected to ${name}: ${tools.length} tools.`);
    } catch (e) {
      status.textContent = "";
      output.replaceChildren(errorView(e));
      announce(`Could not reach ${name}: ${e.message}`);
    }
  }

  const dialog = openDialog({
    title: `Try ${name}`,
    wide: true,
    initialFocus: "button[data-close]",
    build: (close) =>
      h(
        "div",
        { class: "stack tryit" },
        status,
        h(
          "form",
          { class: "stack", novalidate: true, onsubmit: call, "data-call-form": true },
          h("div", { class: "field" }, h("label", { for: ids.tool }, "Tool"), toolSelect, description),
          h("label", { class: "choice", for: ids.raw }, rawToggle, h("span", {}, "Type the arguments as JSON")),
          formArea,
          rawField,
          h("div", { class: "actions" }, callButton, cancelButton),
        ),
        output,
        h("details", {}, promptsSummary, promptList),
        h("details", {}, resourcesSummary, resourceList),
        h(
          "p",
          { class: "muted small" },
          "Through this connector's proxy URL as you, like any MCP client: its tool policy applies and each call is in the audit trail.",
        ),
        h(
          "div",
          { class: "actions" },
          h("button", { type: "button", class: "button", "data-close": true, onclick: close }, "Close"),
        ),
      ),
  });
  dialog.addEventListener("close", () => {
    if (running) running.controller.abort();
    session.close();
  });
  load();
  return dialog;
}
