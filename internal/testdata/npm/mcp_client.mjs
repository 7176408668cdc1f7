// mcp_client.mjs drives mcpflow's MCP endpoint with the official TypeScript
// SDK client (@modelcontextprotocol/sdk) for cmd/mcpflow/mcp_ts_test.go.
//
//   MCP_URL=... [MCP_TOKEN=...] [MCP_INPUT='{...}'] node mcp_client.mjs <scenario>
//
// MCP_INPUT is a JSON object of the scenario's inputs: tool, arguments,
// meta (a tools/call's _meta), taskId, sessionId (resume that session),
// headers (extra HTTP headers), answer (the elicitation result a client
// declaring elicitation answers with).
//
// Each run plays one scenario and prints one JSON line with what it
// observed; errors are reported as data ({"error": {...}}) so that the Go
// test asserts on them. It exits non-zero only when the script itself
// crashes.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const scenario = process.argv[2];
const url = process.env.MCP_URL;
const token = process.env.MCP_TOKEN;
const input = JSON.parse(process.env.MCP_INPUT || '{}');

// responses records every HTTP exchange: its method, the JSON-RPC method
// it carried, its status and its WWW-Authenticate header.
const responses = [];
async function recordingFetch(u, init) {
  let rpc = null;
  if (typeof init?.body === 'string') {
    rpc = JSON.parse(init.body).method ?? null;
  }
  const r = await fetch(u, init);
  responses.push({ method: init?.method ?? 'GET', rpc, status: r.status, wwwAuthenticate: r.headers.get('www-authenticate') });
  return r;
}

// newTransport sends the bearer token (when MCP_TOKEN is set) and
// input.headers (such as Mcpflow-Thread-Id) on every request.
function newTransport(sessionId) {
  const headers = { ...(input.headers ?? {}) };
  if (token) {
    headers.Authorization = `Bearer ${token}`;
  }
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    fetch: recordingFetch,
    sessionId,
  });
}

// notifications collects the notifications/tasks/status the client got
// (on its GET stream); clientErrors what the SDK reported to onerror, and
// clientErrorCodes their codes (an HTTP status for a StreamableHTTPError;
// null for none).
const notifications = [];
const clientErrors = [];
const clientErrorCodes = [];

// elicitations collects the elicitation/create requests the client got
// (when input.answer is set, it declares elicitation and answers them so).
const elicitations = [];

// connect initializes a new session, or resumes input.sessionId when given
// (the SDK's Client skips initialize when the transport has a session id).
async function connect() {
  const transport = newTransport(input.sessionId);
  const options = input.answer ? { capabilities: { elicitation: { form: {} } } } : undefined;
  const client = new Client({ name: 'mcpflow-ts-e2e', version: '1.0.0' }, options);
  if (input.answer) {
    client.setRequestHandler(ElicitRequestSchema, req => {
      elicitations.push(req.params);
      return input.answer;
    });
  }
  client.setNotificationHandler(TaskStatusNotificationSchema, n => { notifications.push(n.params); });
  client.onerror = err => {
    clientErrors.push(String(err?.message ?? err));
    clientErrorCodes.push(err?.code ?? null);
  };
  await client.connect(transport);
  return { client, transport };
}

// waitFor resolves once cond() holds, or after timeoutMs (it does not fail:
// the caller reports what it saw).
async function waitFor(cond, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!cond() && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 50));
  }
}

// errorOf is an error as data: McpError (JSON-RPC code), StreamableHTTPError
// (HTTP status as code) or anything else (code null).
function errorOf(err) {
  return {
    name: err?.constructor?.name ?? typeof err,
    code: err?.code ?? null,
    message: String(err?.message ?? err),
    data: err?.data ?? null,
  };
}

// attempt runs fn and answers its result, or its error as data.
async function attempt(fn) {
  try {
    return { result: await fn() };
  } catch (err) {
    return { error: errorOf(err) };
  }
}

// createTask makes a task-augmented call of input.tool with callToolStream
// and stops reading the stream at taskCreated.
async function createTask(client) {
  const stream = client.experimental.tasks.callToolStream(
    { name: input.tool, arguments: input.arguments ?? {} }, undefined, { task: {} });
  for await (const msg of stream) {
    if (msg.type === 'taskCreated') {
      return msg.task;
    }
    if (msg.type === 'error') {
      throw msg.error;
    }
    throw new Error(`unexpected first stream message ${msg.type}`);
  }
  throw new Error('the stream ended without taskCreated');
}

const scenarios = {
  // What initialize negotiated.
  async initialize() {
    const { client, transport } = await connect();
    const out = {
      sessionId: transport.sessionId,
      protocolVersion: transport.protocolVersion,
      serverInfo: client.getServerVersion(),
      capabilities: client.getServerCapabilities(),
      instructions: client.getInstructions() ?? null,
    };
    await client.close();
    return out;
  },

  // tools/list: every tool's name and execution.
  async list_tools() {
    const { client } = await connect();
    const { tools } = await client.listTools();
    await client.close();
    return { tools: tools.map(t => ({ name: t.name, execution: t.execution ?? null })) };
  },

  // A plain tools/call of input.tool with input.arguments and input.meta
  // as params._meta.
  async call() {
    const { client } = await connect();
    const params = { name: input.tool, arguments: input.arguments ?? {} };
    if (input.meta) {
      params._meta = input.meta;
    }
    const out = await attempt(() => client.callTool(params));
    await client.close();
    return out;
  },

  // A task-augmented call read to its end with callToolStream (the SDK
  // marks the call as a task itself: tools/list said taskSupport), with a
  // tasks/get of our own once the task was created; then waits (up to 60 s)
  // for the notifications/tasks/status of its completion.
  async task_stream() {
    const { client } = await connect();
    await client.listTools();
    const messages = [];
    let got = null;
    let id = null;
    const stream = client.experimental.tasks.callToolStream({ name: input.tool, arguments: input.arguments ?? {} });
    for await (const msg of stream) {
      if (msg.type === 'error') {
        messages.push({ type: msg.type, error: errorOf(msg.error) });
        continue;
      }
      messages.push(msg);
      if (msg.type === 'taskCreated') {
        id = msg.task.taskId;
        got = await attempt(() => client.experimental.tasks.getTask(id));
      }
    }
    await waitFor(() => notifications.some(n => n.taskId === id && n.status === 'completed'), 60000);
    await client.close();
    return { messages, getTask: got, notifications, clientErrors };
  },

  // A task-augmented call; answers the task at taskCreated and the session
  // it was created in.
  async create_task() {
    const { client, transport } = await connect();
    const out = await attempt(() => createTask(client));
    out.sessionId = transport.sessionId;
    await client.close();
    return out;
  },

  async get_task() {
    const { client } = await connect();
    const out = await attempt(() => client.experimental.tasks.getTask(input.taskId));
    await client.close();
    return out;
  },

  // A client that declares elicitation creates a task and reads its result
  // with tasks/result, answering the questions it gets on the way with
  // input.answer.
  async task_elicit() {
    const { client } = await connect();
    const created = await attempt(() => createTask(client));
    if (created.error) {
      await client.close();
      return { created };
    }
    const id = created.result.taskId;
    const result = await attempt(() => client.experimental.tasks.getTaskResult(id, CallToolResultSchema));
    const task = await attempt(() => client.experimental.tasks.getTask(id));
    await client.close();
    return { taskId: id, elicitations, result, task, clientErrors };
  },

  // A client that declares elicitation creates a task and reads its result
  // with tasks/result; when sending its answer fails (what the SDK reports
  // to onerror), it reads the result again with a second tasks/result,
  // whose stream asks the question again, and answers it the same way.
  async task_elicit_again() {
    const { client } = await connect();
    const created = await attempt(() => createTask(client));
    if (created.error) {
      await client.close();
      return { created };
    }
    const id = created.result.taskId;
    const first = attempt(() => client.experimental.tasks.getTaskResult(id, CallToolResultSchema));
    await waitFor(() => clientErrors.length > 0, 60000);
    const errorsBefore = [...clientErrors];
    const result = await attempt(() => client.experimental.tasks.getTaskResult(id, CallToolResultSchema));
    const firstResult = await first;
    await client.close();
    return { taskId: id, elicitations, errorsBefore, clientErrors, clientErrorCodes, result, firstResult };
  },

  // tasks/result; with input.sessionId it resumes that session instead of
  // initializing one.
  async task_result() {
    const { client, transport } = await connect();
    const out = await attempt(() => client.experimental.tasks.getTaskResult(input.taskId, CallToolResultSchema));
    out.sessionId = transport.sessionId;
    out.sent = responses.filter(r => r.rpc).map(r => r.rpc);
    await client.close();
    return out;
  },

  async cancel_task() {
    const { client } = await connect();
    const out = await attempt(() => client.experimental.tasks.cancelTask(input.taskId));
    await client.close();
    return out;
  },

  async list_tasks() {
    const { client } = await connect();
    const out = await attempt(() => client.experimental.tasks.listTasks());
    await client.close();
    return out;
  },

  // tasks/get, tasks/result and tasks/cancel of one task id.
  async task_methods() {
    const { client } = await connect();
    const tasks = client.experimental.tasks;
    const out = {
      getTask: await attempt(() => tasks.getTask(input.taskId)),
      getTaskResult: await attempt(() => tasks.getTaskResult(input.taskId, CallToolResultSchema)),
      cancelTask: await attempt(() => tasks.cancelTask(input.taskId)),
    };
    await client.close();
    return out;
  },

  // connect alone, with the HTTP answers it got.
  async connect() {
    const out = await attempt(async () => {
      const { client } = await connect();
      await client.close();
      return { connected: true };
    });
    out.responses = responses;
    return out;
  },
};

const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${JSON.stringify(scenario)}; one of: ${Object.keys(scenarios).join(', ')}`);
  process.exit(2);
}
if (!url) {
  console.error('MCP_URL is required');
  process.exit(2);
}
const out = await run();
await new Promise(resolve => process.stdout.write(JSON.stringify(out) + '\n', resolve));
process.exit(0);
