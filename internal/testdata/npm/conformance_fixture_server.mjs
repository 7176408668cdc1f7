// conformance_fixture_server.mjs: the fixtures (tools, resources, prompts,
// completions, logging) the server scenarios of the MCP conformance runner
// (@modelcontextprotocol/conformance 0.2.0-alpha.12 and 0.1.16) call, served
// to 2026-07-28 AND 2025-11-25 clients on one endpoint, built on
// @modelcontextprotocol/server 2.4.0. mcpflow's `make conformance` runs the
// runner through mcpflow in front of this server; run directly
// (scripts/conformance.sh --fixture), it shows what the scenarios expect of
// a server that implements all of them (see CONFORMANCE.md).
//
//   node conformance_fixture_server.mjs [--port N | N] [--token T]
//
// Streamable HTTP on 127.0.0.1; the first stdout line is the endpoint URL.
//
// Served: the tools of the tools-*, elicitation-*, input-required-result-*,
// server-stateless and tasks-* scenarios (TOOLS); resources (text, binary,
// the template test://template/{id}/data; resources/subscribe and
// unsubscribe on 2025-11-25, subscriptions/listen's resourceSubscriptions
// on 2026-07-28, where test_trigger_resource_update announces an update of
// test://watched-resource; an unknown URI
// answers -32602 with data.uri, SEP-2164); prompts (PROMPTS, one of them
// answering prompts/get with input_required); completion/complete for prompt
// arguments and the template's id; logging/setLevel (2025-11-25) and
// test_tool_with_logging. On 2026-07-28 the SDK puts the caching hints
// ttlMs and cacheScope (SEP-2549) on list and resources/read results: its
// defaults (0, private) on tools/list, whose list changes, STATIC_CACHE on
// the others. The reference server of the conformance repository
// (examples/servers/typescript/everything-server.ts) is not used: it is
// TypeScript on SDK v1 (it needs tsx, express and zod) and has no
// Tasks-extension fixtures.
//
// Eras: a request carrying the 2026 _meta envelope claim goes to a stateless
// createMcpHandler (legacy: 'reject'); the rest (initialize and its session)
// to a sessionful 2025 Streamable HTTP transport per session, since 2025
// elicitation and sampling are server-to-client requests answered on a later
// POST of the same session. Tools that need client input are written once in
// the 2026 style (input_required + inputResponses); for a 2025 client
// `legacyRounds` turns each inputRequests entry into a real server-to-client
// request and re-runs the tool with the answers.
import { randomUUID } from 'node:crypto';
import {
  Server,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  isLegacyRequest,
  ProtocolError,
} from '@modelcontextprotocol/server';
import {
  LOG_LEVEL,
  SCHEMA_2020_12,
  StateCodec,
  TASKS_EXT,
  TaskStore,
  clientCapabilities,
  declaresTasks,
  elicit,
  flagValue,
  installTaskMethods,
  isTaskListen,
  methodNotFound404,
  paramHeaderRejection,
  portFromArgs,
  requireCapabilities,
  requireTasks,
  serveHTTP,
  sleep,
  taskListenResponse,
  text,
} from './mcp2026_lib.mjs';

const SERVER_INFO = { name: 'mcpflow-conformance-fixture', version: '1.0.0' };
const store = new TaskStore({ pollIntervalMs: 200 });
const states = new StateCodec();

// A 1x1 red PNG, and a 10 ms silent 8 kHz mono 16-bit WAV.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WAV = (() => {
  const samples = 80;
  const b = Buffer.alloc(44 + samples * 2);
  b.write('RIFF', 0); b.writeUInt32LE(36 + samples * 2, 4); b.write('WAVE', 8);
  b.write('fmt ', 12); b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24); b.writeUInt32LE(16000, 28); b.writeUInt16LE(2, 32); b.writeUInt16LE(16, 34);
  b.write('data', 36); b.writeUInt32LE(samples * 2, 40);
  return b.toString('base64');
})();

const noArgs = { type: 'object', properties: {}, additionalProperties: false };
const nameSchema = { name: { type: 'string' } };
const sampling = (textPrompt, maxTokens) => ({
  method: 'sampling/createMessage',
  params: { messages: [{ role: 'user', content: { type: 'text', text: textPrompt } }], maxTokens },
});
const listRoots = { method: 'roots/list', params: {} };
const accepted = (r) => (r?.action === 'accept' && r.content && typeof r.content === 'object' ? r.content : undefined);
const samplingText = (r) => (Array.isArray(r?.content) ? r.content : [r?.content]).find((c) => c?.type === 'text')?.text;
const inputRequired = (inputRequests, state) => ({
  resultType: 'input_required',
  inputRequests,
  ...(state !== undefined ? { requestState: states.mint(state) } : {}),
});
const elicitationSummary = (r) => `action=${r?.action}, content=${JSON.stringify(r?.content ?? {})}`;

// Each tool: def (tools/list entry without the name), and either run(args, io)
// (an ordinary tool; io below) or task 'optional'|'required' with
// work(args, {signal, ask}) (a Tasks-extension task when the request declares
// the extension; 'optional' tools run synchronously otherwise, 'required'
// ones answer -32021). The order is the tools/list order: the runner calls
// the first tool with {} to test header whitespace, so it takes no arguments.
const TOOLS = {
  test_simple_text: {
    def: { description: 'Returns a simple text response', inputSchema: noArgs },
    run: async () => text('This is a simple text response for testing.'),
  },
  test_image_content: {
    def: { description: 'Returns image content (a 1x1 PNG)', inputSchema: noArgs },
    run: async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }),
  },
  test_audio_content: {
    def: { description: 'Returns audio content (a short WAV)', inputSchema: noArgs },
    run: async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }),
  },
  test_embedded_resource: {
    def: { description: 'Returns an embedded resource', inputSchema: noArgs },
    run: async () => ({
      content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
    }),
  },
  test_multiple_content_types: {
    def: { description: 'Returns text, image and resource content', inputSchema: noArgs },
    run: async () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) } },
      ],
    }),
  },
  test_error_handling: {
    def: { description: 'Always returns a tool error (isError: true)', inputSchema: noArgs },
    run: async () => text('This tool intentionally returns an error for testing', { isError: true }),
  },
  test_tool_with_progress: {
    def: { description: 'Reports progress 0, 50 and 100 of 100 when the call has a progressToken', inputSchema: noArgs },
    run: async (_args, io) => {
      for (const progress of [0, 50, 100]) {
        if (progress) await sleep(50, io.signal);
        if (io.progressToken !== undefined)
          await io.notify({ method: 'notifications/progress', params: { progressToken: io.progressToken, progress, total: 100 } });
      }
      return text('Progress test completed');
    },
  },
  test_sampling: {
    def: {
      description: 'Asks the client for an LLM completion (sampling/createMessage) of prompt',
      inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
    },
    run: async ({ prompt = '' }, io) => {
      const r = io.inputResponses?.sampling;
      if (!r) return inputRequired({ sampling: sampling(prompt, 100) });
      return text(`LLM response: ${samplingText(r) ?? JSON.stringify(r)}`);
    },
  },
  test_elicitation: {
    def: {
      description: 'Asks the user (elicitation/create) for a username and an email',
      inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    },
    run: async ({ message = 'Please provide your details' }, io) => {
      const r = io.inputResponses?.elicitation;
      if (!r?.action)
        return inputRequired({
          elicitation: {
            method: 'elicitation/create',
            params: {
              message,
              requestedSchema: {
                type: 'object',
                properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } },
                required: ['username', 'email'],
              },
            },
          },
        });
      return text(`User response: <${elicitationSummary(r)}>`);
    },
  },
  test_elicitation_sep1034_defaults: {
    def: { description: 'Elicitation whose schema has defaults for every primitive type (SEP-1034)', inputSchema: noArgs },
    run: async (_args, io) => {
      const r = io.inputResponses?.defaults;
      if (!r?.action)
        return inputRequired({
          defaults: {
            method: 'elicitation/create',
            params: {
              message: 'Please review and update the form fields with defaults',
              requestedSchema: {
                type: 'object',
                properties: {
                  name: { type: 'string', description: 'User name', default: 'John Doe' },
                  age: { type: 'integer', description: 'User age', default: 30 },
                  score: { type: 'number', description: 'User score', default: 95.5 },
                  status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
                  verified: { type: 'boolean', description: 'Verification status', default: true },
                },
                required: [],
              },
            },
          },
        });
      return text(`Elicitation completed: ${elicitationSummary(r)}`);
    },
  },
  test_elicitation_sep1330_enums: {
    def: { description: 'Elicitation with the five enum schema variants (SEP-1330)', inputSchema: noArgs },
    run: async (_args, io) => {
      const r = io.inputResponses?.enums;
      if (!r?.action) {
        const titled = (word) => [1, 2, 3].map((i) => ({ const: `value${i}`, title: `${['First', 'Second', 'Third'][i - 1]} ${word}` }));
        return inputRequired({
          enums: {
            method: 'elicitation/create',
            params: {
              message: 'Please select options from the enum fields',
              requestedSchema: {
                type: 'object',
                properties: {
                  untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
                  titledSingle: { type: 'string', description: 'Select one option with titles', oneOf: titled('Option') },
                  legacyEnum: { type: 'string', description: 'Select one option (legacy)', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
                  untitledMulti: { type: 'array', description: 'Select multiple options', minItems: 1, maxItems: 3, items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
                  titledMulti: { type: 'array', description: 'Select multiple options with titles', minItems: 1, maxItems: 3, items: { anyOf: titled('Choice') } },
                },
                required: [],
              },
            },
          },
        });
      }
      return text(`Elicitation completed: ${elicitationSummary(r)}`);
    },
  },
  json_schema_2020_12_tool: {
    def: {
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: {
        $schema: SCHEMA_2020_12,
        type: 'object',
        $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: {
          name: { type: 'string' },
          address: { $ref: '#/$defs/address' },
          contactMethod: { type: 'string', enum: ['phone', 'email'] },
          phone: { type: 'string' },
          email: { type: 'string' },
        },
        allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
        if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
        then: { required: ['phone'] },
        else: { required: ['email'] },
        additionalProperties: false,
      },
    },
    run: async (args) => text(`json_schema_2020_12_tool called with ${JSON.stringify(args)}`),
  },
  test_header_param: {
    def: {
      description: 'Echoes region, which also travels in the Mcp-Param-Region header (x-mcp-header, SEP-2243)',
      inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, query: { type: 'string' } } },
    },
    run: async ({ region, query }) => text(`region=${region ?? ''} query=${query ?? ''}`),
  },
  test_missing_capability: {
    def: { description: 'Needs the sampling capability; answers -32021 when the request does not declare it', inputSchema: noArgs },
    run: async (_args, io) => {
      if (!io.caps.sampling) requireCapabilities({ sampling: {} });
      return text('the client declared sampling');
    },
  },
  test_streaming_elicitation: {
    def: { description: 'Asks for a name on its response stream (an input_required result, never a server request)', inputSchema: noArgs },
    run: async (_args, io) => {
      if (!io.caps.elicitation) requireCapabilities({ elicitation: {} });
      const c = accepted(io.inputResponses?.user_name);
      if (typeof c?.name !== 'string') return inputRequired({ user_name: elicit('What is your name?', nameSchema) });
      return text(`Hello, ${c.name}!`);
    },
  },
  test_logging_tool: {
    def: { description: 'Logs (notifications/message) only when the request sets a logLevel', inputSchema: noArgs },
    run: async (_args, io) => {
      if (io.envelope?.[LOG_LEVEL]) {
        try { await io.notify({ method: 'notifications/message', params: { level: 'info', data: 'test_logging_tool ran' } }); } catch {}
      }
      return text('logging tool ran');
    },
  },
  test_tool_with_logging: {
    def: { description: 'Logs three info messages (notifications/message), 50 ms apart', inputSchema: noArgs },
    run: async (_args, io) => {
      for (const [i, data] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
        if (i) await sleep(50, io.signal);
        await io.log('info', data);
      }
      return text('Logging test completed');
    },
  },
  test_trigger_tool_change: {
    def: { description: 'Announces notifications/tools/list_changed to subscriptions/listen streams', inputSchema: noArgs },
    run: async () => {
      mcp.notify.toolsChanged();
      return text('tools list change announced');
    },
  },
  test_trigger_prompt_change: {
    def: { description: 'Announces notifications/prompts/list_changed to subscriptions/listen streams', inputSchema: noArgs },
    run: async () => {
      mcp.notify.promptsChanged();
      return text('prompts list change announced');
    },
  },
  test_trigger_resource_update: {
    def: { description: 'Announces notifications/resources/updated of test://watched-resource to the subscriptions/listen streams that name it', inputSchema: noArgs },
    run: async () => {
      mcp.notify.resourceUpdated('test://watched-resource');
      return text('resource update announced');
    },
  },
  test_input_required_result_elicitation: {
    def: { description: 'MRTR: asks for a name (key user_name), then greets', inputSchema: noArgs },
    run: async (_args, io) => {
      const c = accepted(io.inputResponses?.user_name);
      if (typeof c?.name !== 'string') return inputRequired({ user_name: elicit('What is your name?', nameSchema) });
      return text(`Hello, ${c.name}!`);
    },
  },
  test_input_required_result_sampling: {
    def: { description: 'MRTR: asks for a completion (key capital_question)', inputSchema: noArgs },
    run: async (_args, io) => {
      const r = io.inputResponses?.capital_question;
      if (!r) return inputRequired({ capital_question: sampling('What is the capital of France?', 100) });
      return text(`Sampling response: ${samplingText(r) ?? JSON.stringify(r)}`);
    },
  },
  test_input_required_result_list_roots: {
    def: { description: 'MRTR: asks for the client roots (key client_roots)', inputSchema: noArgs },
    run: async (_args, io) => {
      const r = io.inputResponses?.client_roots;
      if (!Array.isArray(r?.roots)) return inputRequired({ client_roots: listRoots });
      return text(`Client roots: ${r.roots.map((x) => x.uri).join(', ') || '(none)'}`);
    },
  },
  test_input_required_result_request_state: {
    def: { description: 'MRTR with requestState: asks to confirm (key confirm), checks the echoed state', inputSchema: noArgs },
    run: async (_args, io) => {
      const c = accepted(io.inputResponses?.confirm);
      if (c === undefined || io.requestState === undefined)
        return inputRequired({ confirm: elicit('Please confirm', { ok: { type: 'boolean' } }) }, { tool: 'request_state' });
      const s = states.verify(io.requestState);
      if (s.tool !== 'request_state') throw new ProtocolError(-32602, 'requestState of another tool');
      return text(`state-ok: confirmed=${c.ok}`);
    },
  },
  test_input_required_result_multiple_inputs: {
    def: { description: 'MRTR: asks for a name, a greeting and the roots at once', inputSchema: noArgs },
    run: async (_args, io) => {
      const r = io.inputResponses ?? {};
      const name = accepted(r.user_name)?.name;
      if (typeof name !== 'string' || !r.greeting || !Array.isArray(r.client_roots?.roots) || io.requestState === undefined)
        return inputRequired(
          { user_name: elicit('What is your name?', nameSchema), greeting: sampling('Generate a greeting', 50), client_roots: listRoots },
          { tool: 'multiple_inputs' },
        );
      states.verify(io.requestState);
      return text(`name=${name} greeting=${samplingText(r.greeting)} roots=${r.client_roots.roots.length}`);
    },
  },
  test_input_required_result_multi_round: {
    def: { description: 'MRTR over two rounds (step1, then step2) with a new requestState each round', inputSchema: noArgs },
    run: async (_args, io) => {
      const s = io.requestState === undefined ? { round: 0 } : states.verify(io.requestState);
      const step1 = accepted(io.inputResponses?.step1)?.name;
      const step2 = accepted(io.inputResponses?.step2)?.color;
      if (s.round === 1 && typeof step1 === 'string')
        return inputRequired({ step2: elicit('Step 2: What is your favorite color?', { color: { type: 'string' } }) }, { round: 2, name: step1 });
      if (s.round === 2 && typeof step2 === 'string') return text(`name=${s.name} color=${step2}`);
      if (s.round === 2) return inputRequired({ step2: elicit('Step 2: What is your favorite color?', { color: { type: 'string' } }) }, s);
      return inputRequired({ step1: elicit('Step 1: What is your name?', nameSchema) }, { round: 1 });
    },
  },
  test_input_required_result_tampered_state: {
    def: { description: 'MRTR with an HMAC-signed requestState; a tampered state is refused (-32602)', inputSchema: noArgs },
    run: async (_args, io) => {
      if (io.requestState !== undefined) {
        states.verify(io.requestState);
        const c = accepted(io.inputResponses?.confirm);
        if (c !== undefined) return text('state verified');
      }
      return inputRequired({ confirm: elicit('Please confirm', { ok: { type: 'boolean' } }) }, { tool: 'tampered_state' });
    },
  },
  test_input_required_result_capabilities: {
    def: { description: 'MRTR: asks only for the kinds of input the request declared', inputSchema: noArgs },
    run: async (_args, io) => {
      const r = io.inputResponses ?? {};
      const want = {};
      if (io.caps.elicitation && !r.user_name) want.user_name = elicit('What is your name?', nameSchema);
      if (io.caps.sampling && !r.greeting) want.greeting = sampling('Generate a greeting', 50);
      if (io.caps.roots && !r.client_roots) want.client_roots = listRoots;
      if (Object.keys(want).length) return inputRequired(want);
      return text(`answered: ${Object.keys(r).sort().join(', ') || '(nothing declared)'}`);
    },
  },
  // The Tasks-extension fixtures of the tasks-* scenarios.
  greet: {
    def: { description: 'Greets name (an ordinary, synchronous tool)', inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
    run: async ({ name }) => text(`Hello, ${name}!`),
  },
  slow_compute: {
    task: 'optional',
    def: {
      description: 'Sleeps seconds, then returns (a task when the caller declares the extension)',
      inputSchema: { type: 'object', properties: { seconds: { type: 'number' }, label: { type: 'string' } } },
    },
    work: async ({ seconds = 1, label = 'result' }, { signal }) => {
      await sleep(seconds * 1000, signal);
      return text(`computed ${label} after ${seconds}s`);
    },
  },
  failing_job: {
    task: 'required',
    def: { description: 'A task that completes with a tool error (isError: true)', inputSchema: noArgs },
    work: async (_args, { signal }) => {
      await sleep(1000, signal);
      return text('job failed: simulated tool error', { isError: true });
    },
  },
  protocol_error_job: {
    task: 'optional',
    def: { description: 'A task that fails with a JSON-RPC error (status failed)', inputSchema: noArgs },
    work: async (_args, { signal }) => {
      await sleep(300, signal);
      throw new ProtocolError(-32603, 'simulated internal failure');
    },
  },
  confirm_delete: {
    task: 'required',
    def: { description: 'A task that asks to confirm deleting filename (inputRequests key confirm)', inputSchema: { type: 'object', properties: { filename: { type: 'string' } } } },
    work: async ({ filename = 'file' }, { ask }) => {
      const r = await ask('confirm', elicit(`Delete ${filename}?`, { confirm: { type: 'boolean' } }));
      return text(accepted(r)?.confirm === true ? `deleted ${filename}` : `kept ${filename}`);
    },
  },
  multi_input: {
    task: 'required',
    def: { description: 'A task with two questions outstanding at once (keys name and confirm)', inputSchema: noArgs },
    work: async (_args, { ask }) => {
      const [a, b] = await Promise.all([
        ask('name', elicit('Your name?', nameSchema)),
        ask('confirm', elicit('Proceed?', { confirm: { type: 'boolean' } })),
      ]);
      return text(`name=${accepted(a)?.name} confirm=${accepted(b)?.confirm}`);
    },
  },
  test_tool_with_task: {
    def: { description: 'MRTR round (a name), then a task greeting that name', inputSchema: noArgs },
    run: async (_args, io) => {
      const name = accepted(io.inputResponses?.user_name)?.name;
      if (typeof name !== 'string') return inputRequired({ user_name: elicit('What is your name?', nameSchema) }, { tool: 'with_task' });
      if (io.requestState !== undefined) states.verify(io.requestState);
      const work = async ({ signal }) => { await sleep(200, signal); return text(`Hello, ${name}!`); };
      if (io.era === 'modern') {
        requireTasks(io.envelope);
        return store.create(work);
      }
      return work({ signal: io.signal });
    },
  },
};

/**
 * legacyRounds serves a 2026-style tool to a 2025 client: each
 * input_required round becomes real server-to-client requests on the
 * session, and the tool runs again with their answers.
 */
async function legacyRounds(tool, args, io, ctx) {
  for (let round = 0; round < 10; round++) {
    const result = await tool.run(args, io);
    if (result?.resultType !== 'input_required') return result;
    const inputResponses = {};
    for (const [key, req] of Object.entries(result.inputRequests ?? {})) {
      const params = req.method === 'elicitation/create' ? { ...req.params } : req.params ?? {};
      inputResponses[key] = await ctx.mcpReq.send({ method: req.method, params });
    }
    io = { ...io, inputResponses, requestState: result.requestState };
  }
  throw new ProtocolError(-32603, 'too many input rounds');
}

async function callTool(era, server, request, ctx) {
  const p = request.params ?? {};
  const tool = TOOLS[p.name];
  if (!tool) throw new ProtocolError(-32602, `Unknown tool: ${p.name}`);
  const args = p.arguments ?? {};
  const envelope = ctx.mcpReq.envelope;
  const io = {
    era,
    envelope,
    caps: era === 'modern' ? clientCapabilities(envelope) : server.getClientCapabilities() ?? {},
    inputResponses: ctx.mcpReq.inputResponses,
    requestState: ctx.mcpReq.requestState?.(),
    progressToken: ctx.mcpReq._meta?.progressToken,
    notify: (n) => ctx.mcpReq.notify(n),
    // notifications/message at or above the level the client set (2025:
    // logging/setLevel; 2026: the request's logLevel, none without it).
    log: (level, data) => ctx.mcpReq.log(level, data),
    signal: ctx.mcpReq.signal,
  };
  if (tool.run) return era === 'modern' ? tool.run(args, io) : legacyRounds(tool, args, io, ctx);
  if (era === 'modern' && declaresTasks(envelope)) return store.create((ctl) => tool.work(args, ctl));
  if (era === 'modern' && tool.task === 'required') requireTasks(envelope);
  return tool.work(args, { signal: io.signal, ask: () => Promise.reject(new ProtocolError(-32603, 'this tool asks questions only as a task')) });
}

// Each prompt: def (prompts/list entry without the name), get(args, io)
// (the GetPromptResult, or an input_required result; io.inputResponses
// holds the answers; for a 2025 client the SDK asks them on the session)
// and complete (completion/complete values per argument).
const userText = (t) => ({ role: 'user', content: { type: 'text', text: t } });
const PROMPTS = {
  test_simple_prompt: {
    def: { description: 'A simple prompt without arguments' },
    get: () => ({ messages: [userText('This is a simple prompt for testing.')] }),
  },
  test_prompt_with_arguments: {
    def: {
      description: 'A prompt with two required arguments',
      arguments: [
        { name: 'arg1', description: 'First test argument', required: true },
        { name: 'arg2', description: 'Second test argument', required: true },
      ],
    },
    get: ({ arg1, arg2 }) => ({ messages: [userText(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`)] }),
    complete: { arg1: ['paris', 'park', 'party', 'test', 'testing'], arg2: ['hello', 'world'] },
  },
  test_prompt_with_embedded_resource: {
    def: { description: 'A prompt embedding the resource resourceUri', arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }] },
    get: ({ resourceUri }) => ({
      messages: [
        { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
        userText('Please process the embedded resource above.'),
      ],
    }),
  },
  test_prompt_with_image: {
    def: { description: 'A prompt with an image (a 1x1 PNG)' },
    get: () => ({
      messages: [{ role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } }, userText('Please analyze the image above.')],
    }),
  },
  test_input_required_result_prompt: {
    def: { description: 'MRTR on prompts/get: asks for a context (key user_context), then returns the prompt' },
    get: (_args, io) => {
      const c = accepted(io.inputResponses?.user_context);
      if (typeof c?.context !== 'string') return inputRequired({ user_context: elicit('What context should the prompt use?', { context: { type: 'string' } }) });
      return { messages: [userText(`Prompt with context: ${c.context}`)] };
    },
  },
};

function getPrompt({ name, arguments: args = {} }, ctx) {
  const prompt = PROMPTS[name];
  if (!prompt) throw new ProtocolError(-32602, `Unknown prompt: ${name}`);
  for (const a of prompt.def.arguments ?? [])
    if (a.required && typeof args[a.name] !== 'string') throw new ProtocolError(-32602, `Missing required argument: ${a.name}`);
  return prompt.get(args, { inputResponses: ctx.mcpReq.inputResponses });
}

// The direct resources, in resources/list order (the caching scenario
// reads the first), and the one resource template.
const RESOURCES = [
  { uri: 'test://static-text', name: 'static-text', description: 'A static text resource', mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
  { uri: 'test://static-binary', name: 'static-binary', description: 'A static binary resource (a 1x1 PNG)', mimeType: 'image/png', blob: PNG },
  { uri: 'test://watched-resource', name: 'watched-resource', description: 'A resource to subscribe to (it never changes)', mimeType: 'text/plain', text: 'This is the content of the watched resource.' },
];
const TEMPLATE = {
  uriTemplate: 'test://template/{id}/data',
  name: 'template-data',
  description: 'JSON data for the id substituted into the URI',
  mimeType: 'application/json',
  match: (uri) => /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.[1],
  ids: ['1', '2', '123'],
};
const STATIC_CACHE = { ttlMs: 60_000, cacheScope: 'public' };

function readResource(uri) {
  const r = RESOURCES.find((x) => x.uri === uri);
  if (r) {
    const { name, description, ...content } = r;
    return { contents: [content] };
  }
  const id = TEMPLATE.match(uri ?? '');
  if (id !== undefined)
    return { contents: [{ uri, mimeType: TEMPLATE.mimeType, text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] };
  throw new ProtocolError(-32602, 'Resource not found', { uri });
}

/** complete answers completion/complete for a prompt argument or the template's id. */
function complete({ ref, argument }) {
  let pool;
  if (ref?.type === 'ref/prompt' && PROMPTS[ref.name]) pool = PROMPTS[ref.name].complete?.[argument?.name] ?? [];
  else if (ref?.type === 'ref/resource' && ref.uri === TEMPLATE.uriTemplate) pool = argument?.name === 'id' ? TEMPLATE.ids : [];
  else throw new ProtocolError(-32602, `Unknown reference: ${JSON.stringify(ref)}`);
  const values = pool.filter((v) => v.startsWith(argument?.value ?? ''));
  return { completion: { values, total: values.length, hasMore: false } };
}

function buildServer(era) {
  const capabilities = { tools: { listChanged: true }, prompts: { listChanged: true }, completions: {}, logging: {} };
  const server = new Server(SERVER_INFO, {
    capabilities: era === 'modern'
      ? { ...capabilities, resources: { subscribe: true }, extensions: { [TASKS_EXT]: {} } }
      : { ...capabilities, resources: { subscribe: true } },
    cacheHints: { 'prompts/list': STATIC_CACHE, 'resources/list': STATIC_CACHE, 'resources/templates/list': STATIC_CACHE, 'resources/read': STATIC_CACHE },
  });
  server.setRequestHandler('tools/list', async () => ({ tools: Object.entries(TOOLS).map(([name, t]) => ({ name, ...t.def })) }));
  server.setRequestHandler('prompts/list', async () => ({ prompts: Object.entries(PROMPTS).map(([name, p]) => ({ name, ...p.def })) }));
  server.setRequestHandler('prompts/get', async (request, ctx) => getPrompt(request.params, ctx));
  server.setRequestHandler('completion/complete', async (request) => complete(request.params));
  server.setRequestHandler('resources/list', async () => ({ resources: RESOURCES.map(({ uri, name, description, mimeType }) => ({ uri, name, description, mimeType })) }));
  server.setRequestHandler('resources/templates/list', async () => {
    const { match, ids, ...template } = TEMPLATE;
    return { resourceTemplates: [template] };
  });
  server.setRequestHandler('resources/read', async (request) => readResource(request.params.uri));
  if (era === 'legacy') {
    // 2025 only (2026-07-28 removed them): accepted for a known URI; the
    // resources never change, so no notifications/resources/updated follows.
    const known = (uri) => { readResource(uri); return {}; };
    server.setRequestHandler('resources/subscribe', async (request) => known(request.params.uri));
    server.setRequestHandler('resources/unsubscribe', async (request) => known(request.params.uri));
  }
  server.fallbackRequestHandler = async (request, ctx) => {
    if (request.method === 'tools/call') return callTool(era, server, request, ctx);
    throw new ProtocolError(-32601, `Method not found: ${request.method}`);
  };
  if (era === 'modern') installTaskMethods(server, store);
  return server;
}

const log = process.env.LOG === '1' ? (m) => console.error(m) : undefined;
const mcp = createMcpHandler(() => buildServer('modern'), { legacy: 'reject', onerror: (e) => log?.(`[mcp] ${e.message}`) });

// 2025 sessions: one transport and Server per initialize.
const sessions = new Map();
async function legacy(request, msg) {
  const sid = request.headers.get('mcp-session-id');
  if (sid) {
    const transport = sessions.get(sid);
    if (!transport) return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }, { status: 404 });
    return transport.handleRequest(request, { parsedBody: msg });
  }
  if (request.method !== 'POST' || msg?.method !== 'initialize')
    return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: no valid session ID' } }, { status: 400 });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    onsessioninitialized: (id) => { sessions.set(id, transport); },
    onsessionclosed: (id) => { sessions.delete(id); },
  });
  transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
  await buildServer('legacy').connect(transport);
  return transport.handleRequest(request, { parsedBody: msg });
}

async function handle(request, msg) {
  if (await isLegacyRequest(request.clone(), msg)) return legacy(request, msg);
  if (isTaskListen(msg)) return taskListenResponse(store, msg, request.signal);
  if (msg?.method === 'tools/call' && TOOLS[msg.params?.name]) {
    const rejected = paramHeaderRejection(TOOLS[msg.params.name].def.inputSchema, msg, request.headers);
    if (rejected) return rejected;
  }
  return methodNotFound404(await mcp.fetch(request));
}

const { url } = await serveHTTP({ port: portFromArgs(), token: flagValue('token') ?? process.env.MCP_TOKEN, log, handle });
console.log(url);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
