// mcp2026_lib.mjs: what the test servers mcp2026_server.mjs and
// conformance_fixture_server.mjs share, built on @modelcontextprotocol/server
// 2.4.0. The SDK serves the 2026-07-28 core (server/discover, the per-request
// _meta envelope, the Mcp-* header checks, the 2026 error codes) but has no
// server side for the Tasks extension io.modelcontextprotocol/tasks (SEP-2663),
// nor for Mcp-Param-* headers on a low-level Server; this file adds them:
//
//   - TaskStore: tasks in process memory (these are test servers), with
//     inputRequests answered by tasks/update and cancellation by tasks/cancel;
//   - installTaskMethods: tasks/get, tasks/update, tasks/cancel on a Server;
//   - taskListenResponse: subscriptions/listen with notifications.taskIds
//     (the SDK's listen router knows no task filter);
//   - paramHeaderRejection: the SEP-2243 Mcp-Param-* check for tools whose
//     inputSchema declares x-mcp-header;
//   - serveHTTP: node:http in front of a web-standard fetch handler, with the
//     optional bearer check and DNS-rebinding protection (Host and Origin).
//
// Tools are answered from Server.fallbackRequestHandler rather than a
// tools/call handler: the SDK validates a tools/call handler's result as a
// CallToolResult, which would refuse resultType "task".
import http from 'node:http';
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
} from '@modelcontextprotocol/server';

export const TASKS_EXT = 'io.modelcontextprotocol/tasks';
export const CLIENT_CAPS = 'io.modelcontextprotocol/clientCapabilities';
export const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
export const SCHEMA_2020_12 = 'https://json-schema.org/draft/2020-12/schema';
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

// ------------------------------------------------------------ small helpers

/** text builds a CallToolResult with one text block. */
export const text = (t, extra = {}) => ({ content: [{ type: 'text', text: t }], ...extra });

/** elicit builds an embedded form elicitation request (an inputRequests entry). */
export const elicit = (message, properties, required = Object.keys(properties)) => ({
  method: 'elicitation/create',
  params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required } },
});

/** sleep resolves after ms, or rejects when signal aborts. */
export const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });

/** clientCapabilities returns the capabilities the request declared in its _meta envelope ({} when none). */
export const clientCapabilities = (envelope) => envelope?.[CLIENT_CAPS] ?? {};

/** declaresTasks tells whether the request declared the Tasks extension (exactly an object, as SEP-2663 says). */
export function declaresTasks(envelope) {
  const ext = clientCapabilities(envelope)?.extensions?.[TASKS_EXT];
  return ext !== null && typeof ext === 'object' && !Array.isArray(ext);
}

/** requireCapabilities throws -32021 naming caps (a ClientCapabilities object). */
export function requireCapabilities(caps) {
  throw new MissingRequiredClientCapabilityError({ requiredCapabilities: caps }, 'Missing required client capability');
}

/** requireTasks throws -32021 unless the request declared the Tasks extension. */
export function requireTasks(envelope) {
  if (!declaresTasks(envelope)) requireCapabilities({ extensions: { [TASKS_EXT]: {} } });
}

/**
 * StateCodec signs MRTR requestState (HMAC-SHA256, a key per process), so
 * that a tampered state is refused with -32602, as the spec asks of state
 * that steers the server.
 */
export class StateCodec {
  #key = randomBytes(32);
  mint(payload) {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `v1.${body}.${this.#sign(body)}`;
  }
  verify(state) {
    const [v, body, sig] = typeof state === 'string' ? state.split('.') : [];
    const want = body === undefined ? '' : this.#sign(body);
    if (v !== 'v1' || !sig || sig.length !== want.length || !timingSafeEqual(Buffer.from(sig), Buffer.from(want)))
      throw new ProtocolError(-32602, 'Invalid or expired requestState', { reason: 'invalid_request_state' });
    return JSON.parse(Buffer.from(body, 'base64url').toString());
  }
  #sign(body) { return createHmac('sha256', this.#key).update(`v1.${body}`).digest('base64url'); }
}

// --------------------------------------------------------------- task store

/**
 * TaskStore keeps Tasks-extension tasks in process memory. createMcpHandler
 * builds a fresh Server per HTTP request, so the store lives outside the
 * server factory.
 */
export class TaskStore {
  #tasks = new Map();
  #subscribers = new Set();
  constructor({ ttlMs = 60 * 60 * 1000, pollIntervalMs = 200 } = {}) {
    this.ttlMs = ttlMs;
    this.pollIntervalMs = pollIntervalMs;
  }

  /**
   * create starts work({signal, ask}) in the background and returns the
   * CreateTaskResult. The task is stored before this returns, so a tasks/get
   * right after resolves (the extension's durability rule). work returns a
   * CallToolResult (completed, also with isError) or throws: a ProtocolError
   * (or any error with a numeric code) fails the task with that JSON-RPC
   * error. ask(key, inputRequest) parks the task in input_required until
   * tasks/update answers key, and resolves with the answer.
   */
  create(work) {
    const now = new Date().toISOString();
    const t = {
      taskId: randomUUID(),
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs: this.ttlMs,
      pollIntervalMs: this.pollIntervalMs,
      pending: new Map(),
      waiters: new Map(),
      abort: new AbortController(),
    };
    this.#tasks.set(t.taskId, t);
    setTimeout(() => this.#tasks.delete(t.taskId), this.ttlMs).unref();
    const ask = (key, request) =>
      new Promise((resolve) => {
        t.pending.set(key, request);
        t.waiters.set(key, resolve);
        this.#touch(t, 'input_required', 'Waiting for client input');
      });
    Promise.resolve()
      .then(() => work({ signal: t.abort.signal, ask }))
      .then(
        // resultType "complete" inside the inlined result: the ext-tasks 0.2.2
        // client parses it as a 2026 CallToolResult, which requires it.
        (result) => { t.result = { resultType: 'complete', ...result }; this.#touch(t, 'completed'); },
        (err) => {
          if (t.abort.signal.aborted) return;
          t.error = { code: typeof err?.code === 'number' ? err.code : -32603, message: err?.message ?? String(err) };
          if (err?.data !== undefined) t.error.data = err.data;
          this.#touch(t, 'failed', `Tool execution failed: ${t.error.message}`);
        },
      );
    const { inputRequests, result, error, ...created } = this.#detailed(t);
    return { resultType: 'task', ...created };
  }

  /** get returns the DetailedTask of taskId, or throws -32602. */
  get(taskId) { return this.#detailed(this.#lookup(taskId)); }

  /** has tells whether taskId is known. */
  has(taskId) { return this.#tasks.has(taskId); }

  /** update answers outstanding keys of taskId; unknown or answered keys are ignored. */
  update(taskId, responses) {
    const t = this.#lookup(taskId);
    for (const [key, response] of Object.entries(responses ?? {})) {
      const resolve = t.waiters.get(key);
      if (!resolve) continue;
      t.waiters.delete(key);
      t.pending.delete(key);
      resolve(response);
    }
    if (t.status === 'input_required' && t.pending.size === 0) this.#touch(t, 'working');
  }

  /** cancel cancels taskId unless it is terminal (then it is a no-op). */
  cancel(taskId) {
    const t = this.#lookup(taskId);
    if (TERMINAL.has(t.status)) return;
    t.abort.abort(new Error('cancelled'));
    this.#touch(t, 'cancelled', 'Cancelled by the client');
  }

  /** subscribe calls fn with every status change's DetailedTask; it returns the unsubscribe function. */
  subscribe(fn) {
    this.#subscribers.add(fn);
    return () => this.#subscribers.delete(fn);
  }

  #lookup(taskId) {
    const t = this.#tasks.get(taskId);
    if (!t) throw new ProtocolError(-32602, 'Failed to retrieve task: Task not found');
    return t;
  }
  #detailed(t) {
    const d = {
      taskId: t.taskId,
      status: t.status,
      ...(t.statusMessage ? { statusMessage: t.statusMessage } : {}),
      createdAt: t.createdAt,
      lastUpdatedAt: t.lastUpdatedAt,
      ttlMs: t.ttlMs,
      pollIntervalMs: t.pollIntervalMs,
    };
    if (t.status === 'input_required') d.inputRequests = Object.fromEntries(t.pending);
    if (t.status === 'completed') d.result = t.result;
    if (t.status === 'failed') d.error = t.error;
    return d;
  }
  #touch(t, status, statusMessage) {
    if (TERMINAL.has(t.status)) return;
    t.status = status;
    t.statusMessage = statusMessage;
    t.lastUpdatedAt = new Date().toISOString();
    const d = this.#detailed(t);
    for (const fn of this.#subscribers) fn(d);
  }
}

/** A Standard Schema for {taskId: string} params (the SDK accepts any). */
const TaskIdParams = {
  '~standard': {
    version: 1,
    vendor: 'mcpflow-testdata',
    validate: (v) => (typeof v?.taskId === 'string' ? { value: v } : { issues: [{ message: 'taskId must be a string' }] }),
  },
};

/**
 * installTaskMethods serves tasks/get, tasks/update and tasks/cancel from
 * store on server. The SDK answers these legacy method names with -32601
 * unless they are registered with a params schema; tasks/result and
 * tasks/list stay -32601, as the extension removes them. The declaration is
 * checked before the task exists (-32021 before -32602), as the conformance
 * runner expects.
 */
export function installTaskMethods(server, store) {
  server.setRequestHandler('tasks/get', { params: TaskIdParams }, async (p, ctx) => {
    requireTasks(ctx.mcpReq.envelope);
    return { resultType: 'complete', ...store.get(p.taskId) };
  });
  // The SDK lifts params.inputResponses off every request into
  // ctx.mcpReq.inputResponses, dropping entries that are not bare responses.
  server.setRequestHandler('tasks/update', { params: TaskIdParams }, async (p, ctx) => {
    requireTasks(ctx.mcpReq.envelope);
    store.update(p.taskId, ctx.mcpReq.inputResponses ?? p.inputResponses);
    return { resultType: 'complete' };
  });
  server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, async (p, ctx) => {
    requireTasks(ctx.mcpReq.envelope);
    store.cancel(p.taskId);
    return { resultType: 'complete' };
  });
}

/**
 * isTaskListen tells whether msg is a subscriptions/listen asking for task
 * notifications, which taskListenResponse serves instead of the SDK.
 */
export const isTaskListen = (msg) =>
  msg?.method === 'subscriptions/listen' && Array.isArray(msg.params?.notifications?.taskIds);

/**
 * taskListenResponse answers a subscriptions/listen with
 * notifications.taskIds: the acknowledgement naming the known task ids, then
 * notifications/tasks (a DetailedTask) on every status change of those
 * tasks, each tagged with the subscription id (the request id).
 */
export function taskListenResponse(store, msg, signal) {
  const id = msg.id;
  if (!declaresTasks(msg.params?._meta)) {
    return Response.json(
      { jsonrpc: '2.0', id, error: { code: -32021, message: 'Missing required client capability', data: { requiredCapabilities: { extensions: { [TASKS_EXT]: {} } } } } },
      { status: 400 },
    );
  }
  const wanted = msg.params.notifications.taskIds.filter((taskId) => store.has(taskId));
  const enc = new TextEncoder();
  let unsubscribe = () => {};
  const body = new ReadableStream({
    start(c) {
      const send = (m) => c.enqueue(enc.encode(`event: message\ndata: ${JSON.stringify(m)}\n\n`));
      send({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: wanted }, _meta: { [SUBSCRIPTION_ID]: id } } });
      unsubscribe = store.subscribe((d) => {
        if (wanted.includes(d.taskId)) send({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...d, _meta: { [SUBSCRIPTION_ID]: id } } });
      });
      signal?.addEventListener('abort', () => { unsubscribe(); try { c.close(); } catch {} }, { once: true });
    },
    cancel() { unsubscribe(); },
  });
  return new Response(body, { headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no' } });
}

/**
 * methodNotFound404 gives a JSON answer carrying -32601 the HTTP status 404,
 * as 2026-07-28 asks of an unimplemented method. The SDK does so for the
 * methods it knows are removed, but answers in-band (200) what the
 * fallback handler, which these servers need for tools/call, refuses.
 */
export async function methodNotFound404(response) {
  if (response.status !== 200 || !(response.headers.get('content-type') ?? '').includes('application/json')) return response;
  const body = await response.text();
  let code;
  try { code = JSON.parse(body)?.error?.code; } catch {}
  return new Response(body, { status: code === -32601 ? 404 : 200, headers: response.headers });
}

// -------------------------------------------------------- Mcp-Param headers

/** paramDeclarations lists the x-mcp-header properties of an inputSchema (top-level properties chain only). */
function paramDeclarations(schema, path = []) {
  const out = [];
  for (const [name, prop] of Object.entries(schema?.properties ?? {})) {
    if (prop && typeof prop['x-mcp-header'] === 'string') out.push({ header: prop['x-mcp-header'], path: [...path, name], type: prop.type });
    if (prop?.properties) out.push(...paramDeclarations(prop, [...path, name]));
  }
  return out;
}

/** decodeParamValue decodes an Mcp-Param-* value: =?base64?…?= strictly, anything else literally; undefined when malformed. */
function decodeParamValue(v) {
  const m = /^=\?base64\?(.*)\?=$/.exec(v);
  if (!m) return v;
  const b64 = m[1];
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.toString('base64') !== b64) return undefined;
  try { return new TextDecoder('utf-8', { fatal: true }).decode(bytes); } catch { return undefined; }
}

/**
 * paramHeaderRejection checks the Mcp-Param-* headers of a 2026 tools/call
 * against the x-mcp-header declarations of the tool's inputSchema (SEP-2243):
 * a value in the body needs its header, decoding to the same value. It
 * returns the 400 / -32020 Response, or undefined when the headers agree.
 */
export function paramHeaderRejection(inputSchema, msg, headers) {
  const args = msg.params?.arguments ?? {};
  for (const d of paramDeclarations(inputSchema)) {
    let body = args;
    for (const k of d.path) body = body?.[k];
    if (body === undefined || body === null) continue;
    const raw = headers.get(`Mcp-Param-${d.header}`);
    const reject = (why) => Response.json(
      { jsonrpc: '2.0', id: msg.id, error: { code: -32020, message: `Header mismatch: Mcp-Param-${d.header} ${why}` } },
      { status: 400 },
    );
    if (raw === null) return reject('is missing');
    const decoded = decodeParamValue(raw.trim());
    if (decoded === undefined) return reject('has an invalid Base64 value');
    const same = typeof body === 'number' ? Number(decoded) === body : decoded === String(body);
    if (!same) return reject(`does not match the body value ${JSON.stringify(body)}`);
  }
  return undefined;
}

// --------------------------------------------------------------------- HTTP

/**
 * serveHTTP serves handle(request, parsedBody) on host:port (0: a free
 * port) under path /mcp, and resolves with the endpoint URL and a close
 * function. Before handle it answers 401 when token is set and the request
 * lacks "Authorization: Bearer <token>", and 403 for a Host or Origin that
 * is not loopback (DNS-rebinding protection). A client that goes away aborts
 * request.signal.
 */
export function serveHTTP({ handle, host = '127.0.0.1', port = 0, token, log }) {
  const srv = http.createServer(async (req, res) => {
    const abort = new AbortController();
    res.on('close', () => { if (!res.writableFinished) abort.abort(new Error('client went away')); });
    try {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const buf = Buffer.concat(chunks);
      const url = new URL(req.url, `http://${req.headers.host ?? `${host}:${port}`}`);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
      const request = new Request(url, {
        method: req.method,
        headers,
        body: req.method === 'GET' || req.method === 'HEAD' || buf.length === 0 ? undefined : buf,
        signal: abort.signal,
      });
      let parsed;
      try { parsed = buf.length ? JSON.parse(buf.toString()) : undefined; } catch { parsed = undefined; }
      if (log) log(`>> ${req.method} ${url.pathname} ${buf.toString()}`);
      let response;
      if (url.pathname !== '/mcp') response = new Response('not found', { status: 404 });
      else response =
        hostHeaderValidationResponse(request, localhostAllowedHostnames()) ??
        originValidationResponse(request, localhostAllowedOrigins()) ??
        (token && req.headers.authorization !== `Bearer ${token}`
          ? new Response(JSON.stringify({ error: 'invalid_token' }), { status: 401, headers: { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer' } })
          : await handle(request, parsed));
      const out = {};
      response.headers.forEach((v, k) => { out[k] = v; });
      res.writeHead(response.status, out);
      if (!response.body) return res.end();
      if (log && !(response.headers.get('content-type') ?? '').includes('event-stream')) {
        const t = await response.text();
        log(`<< ${response.status} ${t}`);
        return res.end(t);
      }
      const stream = Readable.fromWeb(response.body);
      res.on('close', () => stream.destroy());
      stream.on('error', () => res.destroy());
      stream.pipe(res);
    } catch (e) {
      console.error(e);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, host, () => {
      const { port: bound } = srv.address();
      resolve({ url: `http://${host}:${bound}/mcp`, close: () => new Promise((r) => srv.close(r)) });
    });
  });
}

/**
 * parseArgs splits argv into --name value flags and positional arguments.
 */
export function parseArgs(argv = process.argv.slice(2)) {
  const flags = {};
  const positional = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) flags[argv[i].slice(2)] = argv[++i];
    else positional.push(argv[i]);
  }
  return { flags, positional };
}

/** portFromArgs returns the port from argv (--port N or a bare number), else $PORT, else 0 (a free port). */
export function portFromArgs(argv = process.argv.slice(2)) {
  const { flags, positional } = parseArgs(argv);
  const v = flags.port ?? positional[0] ?? process.env.PORT ?? '0';
  const port = Number(v);
  if (!/^\d+$/.test(String(v)) || port > 65535) throw new Error(`invalid port ${v}`);
  return port;
}

/** flagValue returns the value of --name in argv, else undefined. */
export const flagValue = (name, argv = process.argv.slice(2)) => parseArgs(argv).flags[name];
