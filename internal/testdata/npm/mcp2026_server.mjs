// mcp2026_server.mjs: a 2026-only upstream MCP server for mcpflow's tests,
// built on @modelcontextprotocol/server 2.4.0 with the Tasks extension
// io.modelcontextprotocol/tasks (SEP-2663) served by mcp2026_lib.mjs. It
// speaks only protocol revision 2026-07-28: a 2025 initialize gets -32022
// (HTTP 400) naming the supported versions.
//
//   node mcp2026_server.mjs [--port N | N] [--token T]
//   node mcp2026_server.mjs --stdio
//
// Streamable HTTP on 127.0.0.1 (port from argv, else $PORT, else a free
// one); the first line on stdout is the endpoint URL, http://127.0.0.1:N/mcp.
// With --token (or $MCP_TOKEN) every request needs "Authorization: Bearer T".
// LOG=1 logs each exchange on stderr. Task state lives in process memory.
//
// Tools (every one has a title, annotations and an inputSchema naming
// $schema 2020-12; those returning structuredContent have an outputSchema):
//   echo {text}            ordinary: returns text and {text}
//   progress {steps,delayMs}  ordinary: notifications/progress per step when
//                          the request has _meta.progressToken (the response
//                          becomes SSE), then "done after N steps"
//   mrtr_question {question}  ordinary, core MRTR: answers input_required with
//                          the elicitation "answer" (needs the elicitation
//                          capability, else -32021); the retry with
//                          inputResponses.answer completes with "answer: …"
//   sleep_task {ms}        task when the request declares the extension, else
//                          synchronous: completes after ms with "slept N ms"
//   ask_question {question}   task (extension required, else -32021): the
//                          inputRequests key "answer" (elicitation), answered
//                          by tasks/update; completes with "answer: …"
//   fail_task {message}    task that fails with the JSON-RPC error -32603
//   tool_error_task {message} task that completes with isError: true
//   long_task {seconds}    task that runs until cancelled (default an hour)
import { Server, createMcpHandler, ProtocolError } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import {
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
  portFromArgs,
  requireCapabilities,
  requireTasks,
  serveHTTP,
  sleep,
  taskListenResponse,
  text,
} from './mcp2026_lib.mjs';

const SERVER_INFO = { name: 'mcpflow-test-mcp2026', version: '1.0.0' };
const store = new TaskStore({ pollIntervalMs: 100 });
const states = new StateCodec();

// obj builds an object inputSchema naming the 2020-12 dialect.
const obj = (properties, required = []) => ({ $schema: SCHEMA_2020_12, type: 'object', properties, required, additionalProperties: false });
const answerSchema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
const answerOf = (r) => (r?.action === 'accept' && typeof r.content?.answer === 'string' ? r.content.answer : undefined);

// task: 'none' runs run(args, io); 'optional' starts work(args, ctl) as a
// task when the request declares the extension and awaits it otherwise;
// 'required' answers -32021 to a request without the extension.
const TOOLS = {
  echo: {
    task: 'none',
    def: {
      title: 'Echo',
      description: 'Returns its text argument (an ordinary tool).',
      inputSchema: obj({ text: { type: 'string', description: 'What to echo' } }, ['text']),
      outputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      annotations: { title: 'Echo', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    run: async ({ text: t = '' }) => text(t, { structuredContent: { text: t } }),
  },
  progress: {
    task: 'none',
    def: {
      title: 'Progress reporter',
      description: 'Reports notifications/progress for each step when the call has a progressToken, then returns.',
      inputSchema: obj({ steps: { type: 'integer', minimum: 1, default: 3 }, delayMs: { type: 'integer', minimum: 0, default: 50 } }),
      annotations: { title: 'Progress reporter', readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    run: async ({ steps = 3, delayMs = 50 }, io) => {
      for (let i = 1; i <= steps; i++) {
        await sleep(delayMs, io.signal);
        if (io.progressToken !== undefined)
          await io.notify({ method: 'notifications/progress', params: { progressToken: io.progressToken, progress: i, total: steps, message: `step ${i} of ${steps}` } });
      }
      return text(`done after ${steps} steps`);
    },
  },
  mrtr_question: {
    task: 'none',
    def: {
      title: 'Question (multi round-trip)',
      description: 'Asks a question through core MRTR (input_required), completing on the retry that answers it.',
      inputSchema: obj({ question: { type: 'string' } }),
      outputSchema: answerSchema,
      annotations: { title: 'Question (multi round-trip)', readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    run: async ({ question = 'What is the answer?' }, io) => {
      if (!clientCapabilities(io.envelope).elicitation) requireCapabilities({ elicitation: {} });
      if (io.requestState !== undefined) states.verify(io.requestState);
      const answer = answerOf(io.inputResponses?.answer);
      if (answer === undefined)
        return {
          resultType: 'input_required',
          inputRequests: { answer: elicit(question, { answer: { type: 'string' } }) },
          requestState: states.mint({ tool: 'mrtr_question', question }),
        };
      return text(`answer: ${answer}`, { structuredContent: { answer } });
    },
  },
  sleep_task: {
    task: 'optional',
    def: {
      title: 'Sleep',
      description: 'A task (when the caller declares the tasks extension) that completes after ms milliseconds.',
      inputSchema: obj({ ms: { type: 'integer', minimum: 0, default: 200 } }),
      outputSchema: { type: 'object', properties: { sleptMs: { type: 'integer' } }, required: ['sleptMs'] },
      annotations: { title: 'Sleep', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    work: async ({ ms = 200 }, { signal }) => {
      await sleep(ms, signal);
      return text(`slept ${ms} ms`, { structuredContent: { sleptMs: ms } });
    },
  },
  ask_question: {
    task: 'required',
    def: {
      title: 'Question (task)',
      description: 'A task that asks a question (inputRequests key "answer") and completes with the answer.',
      inputSchema: obj({ question: { type: 'string' } }),
      outputSchema: answerSchema,
      annotations: { title: 'Question (task)', readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    work: async ({ question = 'What is the answer?' }, { ask }) => {
      const r = await ask('answer', elicit(question, { answer: { type: 'string' } }));
      const answer = answerOf(r);
      if (answer === undefined) return text(`no answer (${r?.action ?? 'none'})`, { isError: true });
      return text(`answer: ${answer}`, { structuredContent: { answer } });
    },
  },
  fail_task: {
    task: 'required',
    def: {
      title: 'Failing task',
      description: 'A task that fails with a JSON-RPC error (status failed).',
      inputSchema: obj({ message: { type: 'string' } }),
      annotations: { title: 'Failing task', readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    work: async ({ message = 'simulated failure' }, { signal }) => {
      await sleep(100, signal);
      throw new ProtocolError(-32603, message);
    },
  },
  tool_error_task: {
    task: 'required',
    def: {
      title: 'Tool error task',
      description: 'A task that completes with a tool error (isError: true).',
      inputSchema: obj({ message: { type: 'string' } }),
      annotations: { title: 'Tool error task', readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    },
    work: async ({ message = 'simulated tool error' }, { signal }) => {
      await sleep(100, signal);
      return text(message, { isError: true });
    },
  },
  long_task: {
    task: 'required',
    def: {
      title: 'Long job',
      description: 'A task that runs until it is cancelled (or seconds pass; default an hour).',
      inputSchema: obj({ seconds: { type: 'number', minimum: 0, default: 3600 } }),
      annotations: { title: 'Long job', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    work: async ({ seconds = 3600 }, { signal }) => {
      await sleep(seconds * 1000, signal);
      return text(`ran ${seconds} s`);
    },
  },
};

async function callTool(request, ctx) {
  const p = request.params ?? {};
  const tool = TOOLS[p.name];
  if (!tool) throw new ProtocolError(-32602, `Unknown tool: ${p.name}`);
  const args = p.arguments ?? {};
  const envelope = ctx.mcpReq.envelope;
  if (tool.task === 'none') {
    return tool.run(args, {
      envelope,
      inputResponses: ctx.mcpReq.inputResponses,
      requestState: ctx.mcpReq.requestState(),
      progressToken: ctx.mcpReq._meta?.progressToken,
      notify: (n) => ctx.mcpReq.notify(n),
      signal: ctx.mcpReq.signal,
    });
  }
  if (declaresTasks(envelope)) return store.create((ctl) => tool.work(args, ctl));
  if (tool.task === 'required') requireTasks(envelope);
  return tool.work(args, { signal: ctx.mcpReq.signal, ask: () => Promise.reject(new Error('no task')) });
}

function buildServer() {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {}, extensions: { [TASKS_EXT]: {} } },
    instructions: 'mcpflow test server: 2026-07-28 only, with the tasks extension.',
  });
  server.setRequestHandler('tools/list', async () => ({
    tools: Object.entries(TOOLS).map(([name, t]) => ({ name, ...t.def })),
  }));
  server.fallbackRequestHandler = async (request, ctx) => {
    if (request.method === 'tools/call') return callTool(request, ctx);
    throw new ProtocolError(-32601, `Method not found: ${request.method}`);
  };
  installTaskMethods(server, store);
  return server;
}

const log = process.env.LOG === '1' ? (m) => console.error(m) : undefined;
if (process.argv.includes('--stdio')) {
  // The same server over stdio (2026-07-28 only: a 2025 initialize is
  // refused), one instance for the connection.
  serveStdio(() => buildServer(), { legacy: 'reject', onerror: (e) => log?.(`[mcp] ${e.message}`) });
} else {
const mcp = createMcpHandler(() => buildServer(), { legacy: 'reject', onerror: (e) => log?.(`[mcp] ${e.message}`) });
const { url } = await serveHTTP({
  port: portFromArgs(),
  token: flagValue('token') ?? process.env.MCP_TOKEN,
  log,
  handle: async (request, msg) => (isTaskListen(msg) ? taskListenResponse(store, msg, request.signal) : methodNotFound404(await mcp.fetch(request))),
});
console.log(url);
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
