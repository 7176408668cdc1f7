// mcp2026_client.mjs: a 2026-07-28 MCP test client for mcpflow's tests,
// built on @modelcontextprotocol/client 2.4.0 and, for tasks, on
// @modelcontextprotocol/ext-tasks 0.2.2 (io.modelcontextprotocol/tasks,
// SEP-2663). It drives an MCP endpoint through one scenario and prints one
// JSON line per step, so that a Go test asserts on what it saw.
//
//   node mcp2026_client.mjs [--url URL] [--token T] <scenario> [INPUT]
//
// URL defaults to $MCP_URL and T (sent as "Authorization: Bearer T") to
// $MCP_TOKEN. INPUT is a JSON object (all keys optional):
//   tool, arguments   the tool to call and its arguments
//   answer            the content of the elicitation answer to every question
//                     (default {"answer": "42"}); action: accept (default),
//                     decline or cancel
//   progressToken     sent in the tools/call's _meta (ordinary scenario)
//   headers           extra HTTP headers on every request
//   cancelAfterMs     cancel scenario: wait this long after the task is
//                     created before cancelling (default 200)
//   timeoutMs         give up after this long (default 60000)
//   expectError       the call is expected to fail with a JSON-RPC error:
//                     print it as a step and exit 0 (exit 1 if it succeeds)
//
// Scenarios (steps printed, in order):
//   discover   {"step":"discover","status":…,"result":{…}}, the raw
//              server/discover answer; then {"step":"connect",…}, what the
//              SDK client negotiated with versionNegotiation pinned to
//              2026-07-28
//   ordinary   connect; {"step":"tools/list","tools":[…]} (the SDK's
//              parsed list); with tool: {"step":"progress",…} for each
//              notifications/progress, {"step":"input_request",…} for each
//              MRTR question (answered with answer), {"step":"result",
//              "result":{…}}. Uses the SDK client's own callTool, which
//              refuses a resultType other than complete/input_required
//   task       connect; {"step":"call","kind":"task"|"immediate",
//              "taskId":…}; {"step":"status",…} per task status seen;
//              {"step":"outcome","status":"completed"|"failed"|"cancelled",
//              "result"|"error":…}
//   question   as task, answering each inputRequests entry (tasks/update)
//              with answer; prints {"step":"input_request",…} for each
//   cancel     connect; call (must be a task); {"step":"cancel","taskId"}
//              after cancelAfterMs; then tasks/get until a terminal status:
//              {"step":"final","status":…,"task":{…}}
//
// The process exits 0 when the scenario ran, 1 with a message on stderr
// when something failed (a JSON-RPC error, a timeout, a protocol error of
// the SDKs, a task that was expected and did not come).
//
// Why rawDispatch: the SDK Client refuses resultType "task" on tools/call
// and the tasks/* methods on the 2026 era, so ext-tasks needs a raw request
// path (one POST per request, as 2026-07-28 is stateless) and the per-request
// _meta framing values; ext-tasks builds the _meta and Mcp-Name for tasks/*.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';

const PROTOCOL = '2026-07-28';
const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const clientInfo = { name: 'mcpflow-mcp2026-test-client', version: '1.0.0' };
const clientCapabilities = { elicitation: { form: {} } };

// ------------------------------------------------------------------- args
const argv = process.argv.slice(2);
const flags = {};
const positional = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i].startsWith('--')) flags[argv[i].slice(2)] = argv[++i];
  else positional.push(argv[i]);
}
const [scenario, inputJSON] = positional;
const url = flags.url ?? process.env.MCP_URL;
const token = flags.token ?? process.env.MCP_TOKEN;
let input;
try {
  input = JSON.parse(inputJSON ?? '{}');
} catch (e) {
  fail(`INPUT is not JSON: ${e.message}`);
}
if (!url) fail('no MCP URL: pass --url or set MCP_URL');
const SCENARIOS = { discover, ordinary, task, question, cancel };
if (!SCENARIOS[scenario]) fail(`unknown scenario ${JSON.stringify(scenario)}: one of ${Object.keys(SCENARIOS).join(', ')}`);

const headers = { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(input.headers ?? {}) };
const answerContent = input.answer ?? { answer: '42' };
const answerAction = input.action ?? 'accept';
const timeoutMs = input.timeoutMs ?? 60000;

function print(step) { process.stdout.write(`${JSON.stringify(step)}\n`); }
function fail(message) {
  process.stderr.write(`mcp2026_client ${scenario ?? ''}: ${message}\n`);
  process.exit(1);
}
/** rpcError renders a JSON-RPC error (or an SDK error carrying one) as a step. */
function errorStep(e) {
  const err = e?.response ?? e;
  return { step: 'error', code: err?.code, message: err?.message ?? String(e), ...(err?.data !== undefined ? { data: err.data } : {}) };
}
/** answerFor answers one input request of an ext-tasks session or the SDK client. */
function answerFor(kind) {
  if (kind !== 'elicitation') throw new Error(`the test client answers only elicitation, not ${kind}`);
  return answerAction === 'accept' ? { action: 'accept', content: answerContent } : { action: answerAction };
}

// --------------------------------------------------------------- raw HTTP
let nextId = 1;
/**
 * post sends one JSON-RPC request as its own POST with the 2026 headers and
 * returns {status, message, notifications}: the response to our id, and the
 * notifications that came before it on an SSE stream.
 */
async function post(request, extraHeaders = {}, signal) {
  const id = `c-${nextId++}`;
  const name = request.method === 'tools/call' ? request.params?.name : undefined;
  const res = await fetch(url, {
    method: 'POST',
    signal,
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': PROTOCOL,
      'Mcp-Method': request.method,
      ...(name !== undefined ? { 'Mcp-Name': name } : {}),
      ...headers,
      ...extraHeaders,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, ...request }),
  });
  const type = res.headers.get('content-type') ?? '';
  const notifications = [];
  let message;
  if (type.includes('text/event-stream')) {
    for (const block of (await res.text()).split(/\r?\n\r?\n/)) {
      const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (!data) continue;
      const m = JSON.parse(data);
      if (m.id === id) message = m;
      else if (m.method) notifications.push(m);
    }
  } else {
    const body = await res.text();
    try { message = JSON.parse(body); } catch { message = undefined; }
    if (message === undefined) throw new Error(`HTTP ${res.status} without a JSON-RPC answer: ${body.slice(0, 200)}`);
  }
  if (!message) throw new Error(`HTTP ${res.status}: the stream ended without the response to ${request.method}`);
  return { status: res.status, message, notifications };
}

/** rawDispatch is the ext-tasks host port: tools/call and tasks/* go through post. */
async function rawDispatch(request, options = {}) {
  const { message } = await post(request, options.context?.headers ?? {}, options.signal);
  return message.error ? { kind: 'error', error: message.error } : { kind: 'result', result: message.result };
}

// ---------------------------------------------------------------- clients
async function connect() {
  const client = new Client(clientInfo, {
    capabilities: clientCapabilities,
    versionNegotiation: { mode: { pin: PROTOCOL } },
  });
  client.setRequestHandler('elicitation/create', async (req) => {
    print({ step: 'input_request', kind: 'elicitation', delivery: 'request-retry', params: req.params });
    return answerFor('elicitation');
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  print({
    step: 'connect',
    era: client.getProtocolEra(),
    protocolVersion: client.getNegotiatedProtocolVersion(),
    serverInfo: client.getServerVersion(),
    serverCapabilities: client.getServerCapabilities(),
  });
  return client;
}

function taskSession(client) {
  return createTaskSessionFromClient(client, {
    endpointId: url,
    rawDispatch,
    v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo, clientCapabilities },
    onInputRequest: async (req, ctx) => {
      print({ step: 'input_request', kind: req.kind, delivery: ctx.delivery, key: ctx.inputId, taskId: ctx.taskId, params: req.params });
      return answerFor(req.kind);
    },
    onError: (e) => process.stderr.write(`ext-tasks: ${e.message}\n`),
  });
}

/** statusPrinter prints each task status once per change. */
function statusPrinter() {
  let last;
  return (e) => {
    if (e.type !== 'task') return;
    const { taskId, status, statusMessage } = e.task;
    const key = `${status}|${statusMessage ?? ''}`;
    if (key === last) return;
    last = key;
    print({ step: 'status', taskId, status, ...(statusMessage ? { statusMessage } : {}) });
  };
}

function outcomeStep(outcome) {
  const step = { step: 'outcome', status: outcome.status };
  if (outcome.status === 'completed') step.result = outcome.result;
  if (outcome.status === 'failed') step.error = { code: outcome.error?.code, message: outcome.error?.message, ...(outcome.error?.data !== undefined ? { data: outcome.error.data } : {}) };
  if (outcome.task) step.task = outcome.task.raw;
  return step;
}

function needTool() {
  if (!input.tool) fail('INPUT needs "tool"');
  return input.tool;
}

// -------------------------------------------------------------- scenarios
async function discover() {
  const { status, message } = await post({
    method: 'server/discover',
    params: { _meta: { 'io.modelcontextprotocol/protocolVersion': PROTOCOL, 'io.modelcontextprotocol/clientInfo': clientInfo, 'io.modelcontextprotocol/clientCapabilities': clientCapabilities } },
  });
  if (message.error) {
    print({ ...errorStep(message.error), status });
    if (input.expectError) return;
    fail(`server/discover: ${message.error.code} ${message.error.message}`);
  }
  print({ step: 'discover', status, result: message.result });
  const client = await connect();
  await client.close();
}

async function ordinary() {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    print({ step: 'tools/list', tools });
    if (!input.tool) return;
    let result;
    try {
      result = await client.callTool(
        { name: input.tool, arguments: input.arguments ?? {}, ...(input.progressToken !== undefined ? { _meta: { progressToken: input.progressToken } } : {}) },
        {
          timeout: timeoutMs,
          ...(input.progressToken !== undefined ? { onprogress: (p) => print({ step: 'progress', ...p }) } : {}),
        },
      );
    } catch (e) {
      if (!input.expectError) throw e;
      print(errorStep(e));
      return;
    }
    if (input.expectError) fail(`expected an error, got ${JSON.stringify(result)}`);
    print({ step: 'result', result });
  } finally {
    await client.close();
  }
}

/** runTask calls the tool through ext-tasks and settles it; it returns the execution. */
async function runTask({ expectTask }) {
  const client = await connect();
  const session = taskSession(client);
  try {
    let execution;
    try {
      execution = await session.callTool(needTool(), input.arguments ?? {}, { requestTimeoutMs: timeoutMs });
    } catch (e) {
      if (!input.expectError) throw e;
      print(errorStep(e));
      return;
    }
    print({ step: 'call', kind: execution.kind, ...(execution.handle ? { taskId: execution.handle.taskId } : {}) });
    if (expectTask && execution.kind !== 'task') fail(`expected resultType "task" from ${input.tool}, got an immediate result`);
    const { outcome } = await execution.settle({ onEvent: statusPrinter() });
    print(outcomeStep(outcome));
    if (input.expectError && outcome.status !== 'failed') fail(`expected the task to fail, it ended ${outcome.status}`);
  } finally {
    await session.close();
    await client.close();
  }
}

async function task() { await runTask({ expectTask: true }); }
async function question() { await runTask({ expectTask: true }); }

async function cancel() {
  const client = await connect();
  const session = taskSession(client);
  try {
    const execution = await session.callTool(needTool(), input.arguments ?? {}, { requestTimeoutMs: timeoutMs });
    print({ step: 'call', kind: execution.kind, ...(execution.handle ? { taskId: execution.handle.taskId } : {}) });
    if (execution.kind !== 'task') fail(`expected resultType "task" from ${input.tool}, got an immediate result`);
    const { taskId } = execution.handle;
    await new Promise((r) => setTimeout(r, input.cancelAfterMs ?? 200));
    await execution.cancel();
    print({ step: 'cancel', taskId });
    // The ack is all tasks/cancel owes: poll tasks/get until the task is terminal.
    const controller = session.task(taskId);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const view = await controller.snapshot();
      if (['completed', 'failed', 'cancelled'].includes(view.status)) {
        print({ step: 'final', taskId, status: view.status, task: view.raw });
        return;
      }
      if (Date.now() > deadline) fail(`task ${taskId} still ${view.status} ${timeoutMs} ms after tasks/cancel`);
      await new Promise((r) => setTimeout(r, Math.max(50, view.suggestedPollIntervalMs ?? 200)));
    }
  } finally {
    await session.close().catch(() => {});
    await client.close();
  }
}

const timer = setTimeout(() => fail(`timed out after ${timeoutMs} ms`), timeoutMs + 5000);
timer.unref();
try {
  await SCENARIOS[scenario]();
} catch (e) {
  const step = errorStep(e);
  fail(`${typeof step.code === 'number' ? `JSON-RPC error ${step.code}: ` : step.code !== undefined ? `${step.code}: ` : ''}${step.message}${step.data !== undefined ? ` ${JSON.stringify(step.data)}` : ''}`);
}
process.exit(0);
