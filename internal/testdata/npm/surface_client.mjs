// surface_client.mjs: mcpflow's prompts, resources, completions and log
// messages through the official TypeScript SDK clients, for
// cmd/mcpflow/surface_sdk_test.go: SDK v1 (@modelcontextprotocol/sdk
// 1.32.2, protocol 2025-11-25, a session) or SDK v2
// (@modelcontextprotocol/client 2.4.0, versionNegotiation pinned to
// 2026-07-28, stateless). It prints one JSON line per step, so that a Go
// test asserts on what this independent implementation saw.
//
//   node surface_client.mjs --sdk v1|v2 --url URL [--token T] [--server S]
//                           [--log] [--log-server C] [--log-level L]
//
// T is sent as "Authorization: Bearer T" (default $MCP_TOKEN). S is the
// upstream whose prompt the client gets and completes (default "ever"):
// the reference server-everything's completable-prompt, listed as
// "<S>_completable-prompt". Steps, in order:
//   {"step":"connect","sdk":…,"protocolVersion":…,"capabilities":{…}}
//   {"step":"prompts/list","prompts":[{"name":…,"arguments":[names]}]}
//   {"step":"prompts/get","name":…,"result":{…}}    department Sales, name Eve
//   {"step":"completion/complete","ref":{…},"result":{…}}   name "E" with
//                                                   context department Sales
//   {"step":"resources/list","resources":[{"uri":…,"mimeType":…}]}
//   {"step":"resources/read","uri":…,"result":{…}}  the first listed resource
// With --log or --log-server, the client then asks for log messages at
// level L (default debug), with logging/setLevel on v1
// ({"step":"logging/setLevel","level":L}) and with
// _meta["io.modelcontextprotocol/logLevel"] L on each tools/call on v2, and
// makes these calls:
//   --log (S must be a stdio upstream, whose log messages go to the
//   thread's session): <S>_toggle-simulated-logging (a message at once,
//   then one every 5 s) and <S>_trigger-long-running-operation for 11 s;
//   --log-server C (an HTTP upstream, the conformance fixture server, whose
//   log messages of a call go to its caller): <C>_test_tool_with_logging,
//   which logs three info messages during the call (after the --log calls
//   when both are given).
// Each call and each log message:
//   {"step":"tools/call","name":…,"result":{…}}     for each call
//   {"step":"notifications/message","during":…,"params":{…}}  for each log
//                                                   message, as it arrives;
//                                                   during names the call in
//                                                   flight (null for none)
//
// A step that fails (a JSON-RPC error, an SDK error such as a result its
// schemas refuse) is printed with {"error":{"code","message","data"}} in
// place of what it answers, and the client goes on (the Go test asserts on
// every step); a failed resources/list skips resources/read, a failed
// logging/setLevel all the calls, a failed toggle call the long-running
// operation. The process exits 0 when it ran to its end, 1 with a message
// on stderr when it could not connect or crashed, or after 95 s.
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2, LOG_LEVEL_META_KEY } from '@modelcontextprotocol/client';

const PROTOCOL_2026 = '2026-07-28';
const clientInfo = { name: 'mcpflow-surface-test-client', version: '1.0.0' };
const timeoutMs = 90000;

// ------------------------------------------------------------------- args
const argv = process.argv.slice(2);
const flags = {};
for (let i = 0; i < argv.length; i++) {
  if (!argv[i].startsWith('--')) fail(`unexpected argument ${JSON.stringify(argv[i])}`);
  const name = argv[i].slice(2);
  flags[name] = name === 'log' ? true : argv[++i];
}
const sdk = flags.sdk;
const url = flags.url ?? process.env.MCP_URL;
const token = flags.token ?? process.env.MCP_TOKEN;
const server = flags.server ?? 'ever';
const logServer = flags['log-server'];
const logLevel = flags['log-level'] ?? 'debug';
if (sdk !== 'v1' && sdk !== 'v2') fail('--sdk must be v1 or v2');
if (!url) fail('no MCP URL: pass --url or set MCP_URL');
const headers = token ? { Authorization: `Bearer ${token}` } : {};

function print(step) { process.stdout.write(`${JSON.stringify(step)}\n`); }
function fail(message) {
  process.stderr.write(`surface_client ${sdk ?? ''}: ${message}\n`);
  process.exit(1);
}

// inFlight names the tools/call under way, for the log messages' "during".
let inFlight = null;
function onLogMessage(params) { print({ step: 'notifications/message', during: inFlight, params }); }

// --------------------------------------------------------------- clients
async function connectV1() {
  const client = new ClientV1(clientInfo);
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => onLogMessage(n.params));
  const transport = new TransportV1(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  return { client, protocolVersion: transport.protocolVersion };
}

async function connectV2() {
  const client = new ClientV2(clientInfo, { versionNegotiation: { mode: { pin: PROTOCOL_2026 } } });
  client.setNotificationHandler('notifications/message', (n) => onLogMessage(n.params));
  await client.connect(new TransportV2(new URL(url), { requestInit: { headers } }));
  return { client, protocolVersion: client.getNegotiatedProtocolVersion() };
}

// ----------------------------------------------------------------- steps
/** errorOf is an error as data: a JSON-RPC error's code, message and data, or an SDK error's. */
function errorOf(e) {
  const err = e?.response ?? e;
  return { code: err?.code ?? null, message: String(err?.message ?? e), ...(err?.data !== undefined ? { data: err.data } : {}) };
}

/** attempt runs fn and prints its step: fields it answered, or its error. */
async function attempt(step, fields, fn) {
  try {
    const out = await fn();
    print({ step, ...fields, ...out });
    return out;
  } catch (e) {
    print({ step, ...fields, error: errorOf(e) });
    return undefined;
  }
}

async function run() {
  const { client, protocolVersion } = await (sdk === 'v1' ? connectV1() : connectV2());
  const options = { timeout: timeoutMs };
  try {
    print({ step: 'connect', sdk, protocolVersion, capabilities: client.getServerCapabilities() });

    await attempt('prompts/list', {}, async () => {
      const { prompts } = await client.listPrompts();
      return { prompts: prompts.map((p) => ({ name: p.name, arguments: (p.arguments ?? []).map((a) => a.name) })) };
    });

    const prompt = `${server}_completable-prompt`;
    await attempt('prompts/get', { name: prompt }, async () => ({
      result: await client.getPrompt({ name: prompt, arguments: { department: 'Sales', name: 'Eve' } }, options),
    }));

    const ref = { type: 'ref/prompt', name: prompt };
    await attempt('completion/complete', { ref }, async () => ({
      result: await client.complete({ ref, argument: { name: 'name', value: 'E' }, context: { arguments: { department: 'Sales' } } }, options),
    }));

    const listed = await attempt('resources/list', {}, async () => {
      const { resources } = await client.listResources();
      return { resources: resources.map((r) => ({ uri: r.uri, mimeType: r.mimeType ?? null })) };
    });
    const uri = listed?.resources?.[0]?.uri;
    if (uri !== undefined) {
      await attempt('resources/read', { uri }, async () => ({ result: await client.readResource({ uri }, options) }));
    }

    if (flags.log || logServer !== undefined) {
      let meta;
      if (sdk === 'v1') {
        if (!(await attempt('logging/setLevel', { level: logLevel }, async () => {
          await client.setLoggingLevel(logLevel, options);
          return {};
        }))) return;
      } else {
        // The v2 Client's per-request _meta envelope carries no log level of
        // its own; a request's own _meta keys are sent beside the envelope.
        meta = { [LOG_LEVEL_META_KEY]: logLevel };
      }
      const call = async (name, args) => {
        const params = { name, arguments: args, ...(meta ? { _meta: meta } : {}) };
        inFlight = name;
        try {
          return await attempt('tools/call', { name }, async () => ({
            result: sdk === 'v1' ? await client.callTool(params, undefined, options) : await client.callTool(params, options),
          }));
        } finally {
          inFlight = null;
        }
      };
      if (flags.log && (await call(`${server}_toggle-simulated-logging`, {}))) {
        await call(`${server}_trigger-long-running-operation`, { duration: 11, steps: 11 });
      }
      if (logServer !== undefined) {
        await call(`${logServer}_test_tool_with_logging`, {});
      }
    }
  } finally {
    await client.close();
  }
}

const timer = setTimeout(() => fail(`timed out after ${timeoutMs} ms`), timeoutMs + 5000);
timer.unref();
try {
  await run();
} catch (e) {
  const err = errorOf(e);
  fail(`${typeof err.code === 'number' ? `JSON-RPC error ${err.code}: ` : ''}${err.message}${err.data !== undefined ? ` ${JSON.stringify(err.data)}` : ''}`);
}
process.exit(0);
