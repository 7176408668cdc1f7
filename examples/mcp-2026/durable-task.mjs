// durable-task.mjs: a 2026-07-28 MCP client (the official TypeScript SDK v2,
// @modelcontextprotocol/client 2.4.0, with @modelcontextprotocol/ext-tasks
// 0.2.2) runs a durable mcpflow task through the Tasks extension
// (io.modelcontextprotocol/tasks): the call answers a task, the task asks a
// question, the answer goes back with tasks/update, and the result comes
// with tasks/get. With `make dev` running:
//
//   cd examples/mcp-2026 && npm ci
//   MCP_TOKEN=$(cat ../../.dev/user.token) node durable-task.mjs
//
// The client works on a thread of its own, new at each run
// (example-2026-<time>), on mcpflow at $MCPFLOW_URL (default
// http://127.0.0.1:8080, make dev's; make dev prints the export line for
// other ports). MCP_URL, when set, is the whole endpoint URL instead
// (.../mcp/threads/<thread>, or .../mcp for your default thread).
//
// Needs Node 22 or later (the SDK's requirement).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';

const base = (process.env.MCPFLOW_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
const url = process.env.MCP_URL ?? `${base}/mcp/threads/example-2026-${Date.now().toString(36)}`;
if (!process.env.MCP_TOKEN) throw new Error('set MCP_TOKEN to a user token (make dev: .dev/user.token)');
console.log(`endpoint: ${url}`);
const auth = { Authorization: `Bearer ${process.env.MCP_TOKEN}` };
const protocolVersion = '2026-07-28';
const clientInfo = { name: 'durable-task-example', version: '1.0.0' };
const clientCapabilities = { elicitation: { form: {} } };

// The SDK's client discovers the server (server/discover: no initialize, no
// session in 2026-07-28) and lists tools.
const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: protocolVersion } } });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));

// ext-tasks sends tools/call and tasks/* itself, one POST per request.
async function rawDispatch(request, options = {}) {
  const id = Math.random().toString(36).slice(2);
  const res = await fetch(url, {
    method: 'POST',
    signal: options.signal,
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...auth,
      'MCP-Protocol-Version': protocolVersion, 'Mcp-Method': request.method,
      ...(request.method === 'tools/call' ? { 'Mcp-Name': request.params.name } : {}),
      ...(options.context?.headers ?? {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, ...request }),
  });
  let msg;
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    for (const line of (await res.text()).split(/\r?\n/)) if (line.startsWith('data:') && JSON.parse(line.slice(5)).id === id) msg = JSON.parse(line.slice(5));
  } else msg = await res.json();
  return msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
}

const session = createTaskSessionFromClient(client, {
  endpointId: url,
  rawDispatch,
  v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities },
  // The task's question (inputRequests), answered with tasks/update.
  onInputRequest: async (req) => {
    console.log(`question: ${req.params.message}`);
    return { action: 'accept', content: { format: 'pdf' } };
  },
});
try {
  // demo_submit_job is a durable tool of make dev's demo server: a Temporal
  // workflow in mcpflow. outcome "ask" makes the job ask for a format.
  const run = await session.callTool('demo_submit_job', { duration_seconds: 1, outcome: 'ask', answer_duration_seconds: 1 });
  console.log(`call answered: ${run.kind} ${run.handle?.taskId ?? ''}`);
  const { outcome } = await run.settle({ onEvent: (e) => e.type === 'task' && console.log(`status: ${e.task.status}`) });
  console.log(`outcome: ${outcome.status} ${JSON.stringify(outcome.result?.structuredContent ?? outcome.error ?? null)}`);
} finally {
  await session.close();
  await client.close();
}
