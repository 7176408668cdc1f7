// oauth_client.mjs: an MCP client that authorizes itself the way the MCP
// authorization spec (OAuth 2.1) says, built on the official TypeScript SDK
// v1 (@modelcontextprotocol/sdk 1.32.2): StreamableHTTPClientTransport with
// an OAuthClientProvider (authProvider). It drives an MCP endpoint through
// one scenario and prints one JSON line per step, so that a Go test asserts
// on what an independent client saw (internal/testsupport/testenv/oauthclient.go).
//
//   OAUTH_CLIENT_ID=... OAUTH_REDIRECT_URI=... MCP_URL=... [MCP_INPUT='{...}'] \
//     node oauth_client.mjs oauth
//
// OAUTH_CLIENT_ID is a client pre-registered at the authorization server;
// without it the SDK registers one (RFC 7591 dynamic client registration)
// at the server's registration_endpoint. OAUTH_CLIENT_SECRET, when set,
// makes it a confidential client (without it: token_endpoint_auth_method
// none). The client asks for the authorization_code and refresh_token
// grants.
// OAUTH_REDIRECT_URI is its redirect URI, e.g. http://127.0.0.1:1/callback:
// nothing has to listen there, the script plays the browser and stops at the
// redirect to it. OAUTH_SCOPE is the client's fallback scope (the SDK asks
// for the WWW-Authenticate scope first, then the metadata's
// scopes_supported). MCP_INPUT is a JSON object (all keys optional):
//   clientSecret      oauth: the client secret (default
//                     $OAUTH_CLIENT_SECRET)
//   scope             oauth: the client's fallback scope (default
//                     $OAUTH_SCOPE)
//   tool, arguments   the tool the oauth scenario calls task-augmented
//                     (no call without tool)
//   task              the task parameters of that call (default {})
//   headers           extra HTTP headers on every request
//   loginHint         added as login_hint to the authorization URL when the
//                     script follows it (the URL it reports is the SDK's)
//   timeoutMs         give up after this long (default 60000)
//   tokensFile        write the tokens the sign-in got here (mode 0600,
//                     JSON {access_token, id_token, refresh_token}) for
//                     the test to use; they are never printed
//   expectError       a failure is expected: print it as the "error" step
//                     and exit 0 (exit 1 if the scenario succeeds)
//
// Scenarios and the steps they print, in order:
//   oauth      {"step":"unauthorized","status":401,"rpc":"initialize",
//                "wwwAuthenticate":…,"challenge":{"scheme":"Bearer",
//                "resource_metadata":…,"scope":…,…}}: the first 401;
//              {"step":"discovery","resourceMetadataUrl":…,
//                "resourceMetadata":{…},"authorizationServer":…,
//                "authorizationServerMetadataUrl":…,
//                "authorizationServerMetadata":{…},"attempts":[{url,status}]}:
//                the metadata the SDK fetched (RFC 9728, then RFC 8414 /
//                OpenID discovery; attempts lists every well-known GET);
//              {"step":"registration","clientId":…,
//                "tokenEndpointAuthMethod":…,"grantTypes":[…],"scope":…}:
//                only without OAUTH_CLIENT_ID, the client the SDK registered;
//              {"step":"authorize","authorizationUrl":…,"endpoint":…,
//                "params":{…},"resource":…,"scope":…,"clientId":…,
//                "pkce":{"method":"S256","challengeMatchesVerifier":true},
//                "hops":[{url,status}],"redirectedTo":…,"stateMatched":true,
//                "iss":…}: the authorization request the SDK built and the
//                redirects followed to the redirect URI (URLs of hops
//                without query);
//              {"step":"token","endpoint":…,"status":200,"request":{
//                "grant_type","client_id","redirect_uri","resource","scope",
//                "codeVerifier":true,"clientSecret":false,"basicAuth":false},
//                "tokenType":…,"expiresIn":…,"scope":…,"refreshToken":bool,
//                "idToken":bool,
//                "claims":{"iss","aud","sub","scope","azp","client_id",…}}:
//                the code exchange (transport.finishAuth) and the access
//                token's JWT payload, decoded without verification (claims
//                null when it is not a JWT); no token is ever printed;
//              {"step":"connect","protocolVersion":…,"serverInfo":{…},
//                "sessionId":…,"bearerSent":true}: the second connect;
//              {"step":"tools/list","tools":[names],"taskSupport":{name:…}};
//              with tool: {"step":"call","kind":"task"|"immediate",
//                "taskId":…}, {"step":"status","status":…,…} for each
//                tasks/get, {"step":"outcome","status":"completed"|"failed"|
//                "cancelled","result"|"error":…};
//              {"step":"http","requests":[{method,url,rpc,status,
//                authorization,wwwAuthenticate}]}: every HTTP exchange of
//                the SDK, "authorization" being the scheme it sent (Bearer)
//                or null.
//
// Failures print {"step":"error","at":<step>,"error":{name,code,message}}
// and exit 1 (0 with expectError).
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const clientInfo = { name: 'mcpflow-oauth-e2e', version: '1.0.0' };
const scenario = process.argv[2];
const url = process.env.MCP_URL;
let input;
try {
  input = JSON.parse(process.env.MCP_INPUT || '{}');
} catch (e) {
  usage(`MCP_INPUT is not JSON: ${e.message}`);
}
const clientSecret = input.clientSecret ?? process.env.OAUTH_CLIENT_SECRET;
const clientScope = input.scope ?? process.env.OAUTH_SCOPE;
const timeoutMs = input.timeoutMs ?? 60000;

function usage(msg) {
  process.stderr.write(`oauth_client.mjs: ${msg}\n`);
  process.exit(2);
}

// ------------------------------------------------------------ output
let at = 'start'; // the step under way, named in an error step

function print(step) {
  process.stdout.write(JSON.stringify(step) + '\n');
}

async function finish(code) {
  await new Promise(resolve => process.stdout.write('', resolve));
  process.exit(code);
}

// errorOf is an error as data: McpError (JSON-RPC code), StreamableHTTPError
// (HTTP status as code), an OAuth error (its errorCode) or anything else.
function errorOf(err) {
  return {
    name: err?.constructor?.name ?? typeof err,
    code: err?.code ?? err?.errorCode ?? null,
    message: String(err?.message ?? err),
  };
}

// ------------------------------------------------------------ HTTP record
// requests records every HTTP exchange the SDK makes (through the
// transport's fetch, which the SDK also uses for discovery and the token
// request): no header values, bodies or query strings that carry secrets.
const requests = [];
// wellKnown keeps the parsed JSON of every successful well-known GET.
const wellKnown = [];
// tokenExchange is the last token request and its answer (without tokens).
let tokenExchange = null;

function pathOf(u) {
  const p = new URL(u);
  return p.origin + p.pathname;
}

function formOf(body) {
  if (body instanceof URLSearchParams) return body;
  if (typeof body === 'string') {
    try {
      return new URLSearchParams(body);
    } catch {
      return null;
    }
  }
  return null;
}

async function recordingFetch(u, init) {
  const target = String(u instanceof Request ? u.url : u);
  const headers = new Headers(init?.headers);
  const method = (init?.method ?? 'GET').toUpperCase();
  let rpc = null;
  if (typeof init?.body === 'string' && headers.get('content-type')?.includes('json')) {
    try {
      const msg = JSON.parse(init.body);
      rpc = Array.isArray(msg) ? msg.map(m => m.method ?? null) : (msg.method ?? null);
    } catch {
      // not JSON-RPC
    }
  }
  const form = method === 'POST' ? formOf(init?.body) : null;
  const response = await fetch(u, init);
  const auth = headers.get('authorization');
  requests.push({
    method,
    url: pathOf(target),
    rpc,
    status: response.status,
    authorization: auth ? auth.split(' ')[0] : null,
    wwwAuthenticate: response.headers.get('www-authenticate'),
  });
  if (method === 'GET' && new URL(target).pathname.includes('/.well-known/')) {
    let body = null;
    if (response.ok) {
      try {
        body = await response.clone().json();
      } catch {
        // not JSON: the SDK will say so
      }
    }
    wellKnown.push({ url: target, status: response.status, body });
  }
  if (form?.get('grant_type')) {
    let answer = null;
    try {
      answer = await response.clone().json();
    } catch {
      // not JSON: the SDK will say so
    }
    tokenExchange = {
      endpoint: pathOf(target),
      status: response.status,
      request: {
        grant_type: form.get('grant_type'),
        client_id: form.get('client_id'),
        redirect_uri: form.get('redirect_uri'),
        resource: form.getAll('resource').length > 1 ? form.getAll('resource') : form.get('resource'),
        scope: form.get('scope'),
        codeVerifier: form.has('code_verifier'),
        clientSecret: form.has('client_secret'),
        basicAuth: (auth ?? '').toLowerCase().startsWith('basic '),
      },
      answer: answer && {
        tokenType: answer.token_type ?? null,
        expiresIn: answer.expires_in ?? null,
        scope: answer.scope ?? null,
        refreshToken: typeof answer.refresh_token === 'string',
        error: answer.error ?? null,
        errorDescription: answer.error_description ?? null,
      },
    };
  }
  return response;
}

// challengeOf parses a WWW-Authenticate challenge: its scheme and its
// auth-params (quoted or token values).
function challengeOf(header) {
  if (!header) return null;
  const m = /^\s*([^\s,]+)\s*(.*)$/s.exec(header);
  const out = { scheme: m[1] };
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g;
  let p;
  while ((p = re.exec(m[2])) !== null) {
    out[p[1]] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3];
  }
  return out;
}

// claimsOf decodes a JWT's payload without verifying it; null when the
// token is not a JWT.
function claimsOf(jwt) {
  const parts = String(jwt ?? '').split('.');
  if (parts.length !== 3) return null;
  try {
    return JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}

function s256(verifier) {
  return createHash('sha256').update(verifier).digest('base64url');
}

// ------------------------------------------------------------ the browser
// cookies is the browser's cookie jar: name=value per host.
const cookies = new Map();

function storeCookies(host, response) {
  const set = response.headers.getSetCookie?.() ?? [];
  const jar = cookies.get(host) ?? new Map();
  for (const c of set) {
    const [pair] = c.split(';');
    const i = pair.indexOf('=');
    if (i > 0) jar.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
  }
  cookies.set(host, jar);
}

function cookieHeader(host) {
  const jar = cookies.get(host);
  return jar && jar.size ? [...jar].map(([k, v]) => `${k}=${v}`).join('; ') : null;
}

// followToRedirect plays the user agent: it GETs the authorization URL and
// follows each redirect itself until one goes to the redirect URI, and
// answers that redirect; it appends each request to hops.
async function followToRedirect(start, redirectUri, hops) {
  const target = new URL(redirectUri);
  let next = new URL(start);
  for (let i = 0; i < 20; i++) {
    const headers = { Accept: 'text/html,application/json' };
    const cookie = cookieHeader(next.host);
    if (cookie) headers.Cookie = cookie;
    const r = await fetch(next, { redirect: 'manual', headers });
    storeCookies(next.host, r);
    hops.push({ url: pathOf(next), status: r.status });
    const location = r.headers.get('location');
    if (r.status < 300 || r.status >= 400 || !location) {
      const body = (await r.text().catch(() => '')).slice(0, 500);
      throw new Error(`the authorization flow stopped at ${pathOf(next)} with HTTP ${r.status}: ${body}`);
    }
    await r.body?.cancel();
    const loc = new URL(location, next);
    if (loc.origin === target.origin && loc.pathname === target.pathname) {
      return loc;
    }
    next = loc;
  }
  throw new Error(`more than 20 redirects from ${pathOf(start)}`);
}

// ------------------------------------------------------------ the provider
// OAuthProvider is a pre-registered client's OAuthClientProvider: tokens,
// code verifier and discovery state in memory; redirectToAuthorization
// follows the authorization URL to the redirect URI and keeps the code.
class OAuthProvider {
  constructor(clientId, clientSecret, redirectUri, scope) {
    this._client = clientId ? { client_id: clientId } : undefined;
    if (clientId && clientSecret) this._client.client_secret = clientSecret;
    this._secret = clientSecret;
    this.registered = null; // the client dynamic registration gave
    this._redirectUri = redirectUri;
    this._scope = scope;
    this._tokens = undefined;
    this._verifier = undefined;
    this._state = undefined;
    this._discovery = undefined;
    this.authorization = null; // what redirectToAuthorization saw
    this.code = undefined;
  }

  get redirectUrl() {
    return this._redirectUri;
  }

  get clientMetadata() {
    const m = {
      client_name: clientInfo.name,
      redirect_uris: [this._redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: this._secret ? 'client_secret_basic' : 'none',
    };
    if (this._scope) m.scope = this._scope;
    return m;
  }

  state() {
    this._state = randomBytes(16).toString('base64url');
    return this._state;
  }

  clientInformation() {
    return this._client;
  }

  // saveClientInformation stores what the SDK hands back: the pre-registered
  // client stamped with the authorization server that accepted it.
  saveClientInformation(info) {
    if (!this._client) this.registered = info;
    this._client = info;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this._tokens = tokens;
  }

  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }

  codeVerifier() {
    if (!this._verifier) throw new Error('no code verifier saved');
    return this._verifier;
  }

  saveDiscoveryState(state) {
    this._discovery = state;
  }

  discoveryState() {
    return this._discovery;
  }

  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this._discovery = undefined;
  }

  async redirectToAuthorization(authorizationUrl) {
    const u = new URL(authorizationUrl);
    const params = Object.fromEntries(u.searchParams);
    const resources = u.searchParams.getAll('resource');
    const out = {
      authorizationUrl: u.href,
      endpoint: pathOf(u),
      params,
      resource: resources.length > 1 ? resources : (resources[0] ?? null),
      scope: params.scope ?? null,
      clientId: params.client_id ?? null,
      pkce: {
        method: params.code_challenge_method ?? null,
        challengeMatchesVerifier: !!this._verifier && params.code_challenge === s256(this._verifier),
      },
    };
    this.authorization = out;
    const follow = new URL(u);
    if (input.loginHint) follow.searchParams.set('login_hint', input.loginHint);
    out.hops = [];
    const redirect = await followToRedirect(follow, this._redirectUri, out.hops);
    out.redirectedTo = pathOf(redirect);
    out.iss = redirect.searchParams.get('iss');
    const error = redirect.searchParams.get('error');
    if (error) {
      throw new Error(`the authorization server answered ${error}: ${redirect.searchParams.get('error_description') ?? ''}`);
    }
    out.stateMatched = redirect.searchParams.get('state') === this._state;
    if (!out.stateMatched) {
      throw new Error(`the redirect's state ${redirect.searchParams.get('state')} is not the one sent`);
    }
    this.code = redirect.searchParams.get('code');
    if (!this.code) throw new Error(`the redirect to ${out.redirectedTo} has no code`);
  }
}

// ------------------------------------------------------------ scenarios
function newTransport(options) {
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { ...(input.headers ?? {}), ...(options.headers ?? {}) } },
    fetch: recordingFetch,
    authProvider: options.authProvider,
  });
}

function connected(client, transport) {
  return {
    protocolVersion: transport.protocolVersion ?? null,
    serverInfo: client.getServerVersion() ?? null,
    sessionId: transport.sessionId ?? null,
  };
}

async function oauth() {
  const clientId = process.env.OAUTH_CLIENT_ID;
  const redirectUri = process.env.OAUTH_REDIRECT_URI;
  if (!redirectUri) usage('the oauth scenario needs OAUTH_REDIRECT_URI');
  const provider = new OAuthProvider(clientId, clientSecret, redirectUri, clientScope);

  // 1. The first connect: 401, discovery, the authorization request.
  at = 'unauthorized';
  const first = newTransport({ authProvider: provider });
  let client = new Client(clientInfo);
  let refused = null;
  try {
    await client.connect(first);
  } catch (err) {
    refused = err;
  }
  const challenge = requests.find(r => r.status === 401);
  if (!challenge) {
    throw new Error(refused ? `connect failed without a 401: ${refused.message}` : 'connected without a 401: the endpoint did not ask for a token');
  }
  print({
    step: 'unauthorized',
    status: challenge.status,
    method: challenge.method,
    rpc: challenge.rpc,
    authorization: challenge.authorization,
    wwwAuthenticate: challenge.wwwAuthenticate,
    challenge: challengeOf(challenge.wwwAuthenticate),
  });
  at = 'discovery';
  const prm = wellKnown.find(w => new URL(w.url).pathname.includes('/.well-known/oauth-protected-resource') && w.body);
  const as = wellKnown.find(w => !new URL(w.url).pathname.includes('/.well-known/oauth-protected-resource') && w.body);
  print({
    step: 'discovery',
    resourceMetadataUrl: prm?.url ?? null,
    resourceMetadata: prm?.body ?? null,
    authorizationServer: provider.discoveryState()?.authorizationServerUrl ?? null,
    authorizationServerMetadataUrl: as?.url ?? null,
    authorizationServerMetadata: as?.body ?? null,
    attempts: wellKnown.map(w => ({ url: w.url, status: w.status })),
  });
  if (provider.registered) {
    at = 'registration';
    print({
      step: 'registration',
      clientId: provider.registered.client_id ?? null,
      tokenEndpointAuthMethod: provider.registered.token_endpoint_auth_method ?? null,
      grantTypes: provider.registered.grant_types ?? null,
      scope: provider.registered.scope ?? null,
    });
  }
  if (provider.authorization) {
    at = 'authorize';
    print({ step: 'authorize', ...provider.authorization });
  }
  if (!(refused instanceof UnauthorizedError)) {
    throw refused ?? new Error('connect succeeded after the 401 without an authorization step');
  }
  if (!provider.code) {
    throw new Error('the SDK did not redirect to an authorization URL');
  }

  // 2. The code exchange.
  at = 'token';
  await first.finishAuth(provider.code);
  const tokens = provider.tokens();
  print({
    step: 'token',
    endpoint: tokenExchange?.endpoint ?? null,
    status: tokenExchange?.status ?? null,
    request: tokenExchange?.request ?? null,
    tokenType: tokens?.token_type ?? null,
    expiresIn: tokens?.expires_in ?? null,
    scope: tokens?.scope ?? null,
    refreshToken: typeof tokens?.refresh_token === 'string',
    idToken: typeof tokens?.id_token === 'string',
    claims: claimsOf(tokens?.access_token),
  });
  if (input.tokensFile) {
    writeFileSync(input.tokensFile, JSON.stringify({
      access_token: tokens?.access_token ?? null,
      id_token: tokens?.id_token ?? null,
      refresh_token: tokens?.refresh_token ?? null,
    }), { mode: 0o600 });
  }

  // 3. Connect again, now with the token.
  at = 'connect';
  const before = requests.length;
  const transport = newTransport({ authProvider: provider });
  client = new Client(clientInfo);
  client.onerror = () => {}; // a GET stream the server refuses is not our business here
  await client.connect(transport);
  const sent = requests.slice(before).filter(r => r.url === pathOf(url));
  print({
    step: 'connect',
    ...connected(client, transport),
    bearerSent: sent.length > 0 && sent.every(r => r.authorization === 'Bearer'),
  });

  at = 'tools/list';
  const { tools } = await client.listTools();
  const taskSupport = {};
  for (const t of tools) {
    if (t.execution?.taskSupport) taskSupport[t.name] = t.execution.taskSupport;
  }
  print({ step: 'tools/list', tools: tools.map(t => t.name), taskSupport });

  if (input.tool) {
    at = 'call';
    await callTask(client);
  }
  await client.close();
}

// callTask makes a task-augmented tools/call of input.tool and reads it to
// its end with callToolStream (tasks/get until terminal, then tasks/result).
async function callTask(client) {
  const stream = client.experimental.tasks.callToolStream(
    { name: input.tool, arguments: input.arguments ?? {} },
    CallToolResultSchema,
    { task: input.task ?? {}, timeout: timeoutMs },
  );
  let called = false;
  let last = null;
  for await (const msg of stream) {
    switch (msg.type) {
      case 'taskCreated':
        called = true;
        print({ step: 'call', kind: 'task', taskId: msg.task.taskId, status: msg.task.status });
        break;
      case 'taskStatus':
        last = msg.task.status;
        print({ step: 'status', taskId: msg.task.taskId, status: msg.task.status, statusMessage: msg.task.statusMessage ?? null });
        break;
      case 'result':
        if (!called) print({ step: 'call', kind: 'immediate', taskId: null });
        print({ step: 'outcome', status: 'completed', result: msg.result });
        return;
      case 'error':
        if (!called) throw msg.error;
        print({ step: 'outcome', status: last === 'cancelled' ? 'cancelled' : 'failed', error: errorOf(msg.error) });
        return;
      default:
        throw new Error(`unexpected stream message ${msg.type}`);
    }
  }
  throw new Error('the tools/call stream ended without a result');
}

// ------------------------------------------------------------ main
const SCENARIOS = { oauth };
if (!SCENARIOS[scenario]) usage(`unknown scenario ${JSON.stringify(scenario)}: one of ${Object.keys(SCENARIOS).join(', ')}`);
if (!url) usage('MCP_URL is required');

let timer;
const deadline = new Promise((_, reject) => {
  timer = setTimeout(() => reject(new Error(`the scenario did not finish within ${timeoutMs} ms`)), timeoutMs);
});
let code = 0;
try {
  await Promise.race([SCENARIOS[scenario](), deadline]);
  if (input.expectError) {
    process.stderr.write('oauth_client.mjs: the scenario succeeded but expectError was set\n');
    code = 1;
  }
} catch (err) {
  process.stderr.write(`oauth_client.mjs: ${at}: ${err?.stack ?? err}\n`);
  print({ step: 'error', at, error: errorOf(err) });
  code = input.expectError ? 0 : 1;
}
clearTimeout(timer);
print({ step: 'http', requests });
await finish(code);
