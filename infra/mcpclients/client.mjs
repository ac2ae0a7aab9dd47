// A real MCP client, driven by the Go tests of this directory: the
// TypeScript SDK v1 (@modelcontextprotocol/sdk) or v2
// (@modelcontextprotocol/client), each over its own Streamable HTTP client
// transport with the credential's Bearer header.
//
//   node client.mjs '<plan as JSON>'
//
// The plan: {"sdk": "v1"|"v2", "url": ".../mcp", "key": "cs_demo_ask",
//   "negotiation": "auto" (v2 only: probe for 2026-07-28; default: the SDK's default),
//   "listChanged": true (v2 only: register a tools list-changed handler),
//   "elicit": "accept"|"decline" (declare form elicitation and answer so; absent: declare none),
//   "call": {"name": "deleteContact", "arguments": {"id": "12"}} (optional),
//   "waitSeconds": 25 (how long to follow a paused call through confirmation_status),
//   "headers": {"Origin": "..."} (more request headers),
//   "oauth": {"redirect": "http://127.0.0.1:PORT/callback"} (v1 only: no key; sign in with the
//     SDK's OAuth client instead: it walks discovery from the 401 and registers (RFC 7591); the
//     authorization URL is printed as {"event":"authorize","url":".."} and the code is read as
//     one line on standard input, then the SDK exchanges it (PKCE) and connects again),
//   "refresh": true (oauth: after the call, spoil the access token so the next request refreshes),
//   "afterRevoke": true (oauth: then print {"event":"waiting"}, read one line, and list the tools
//     once more: {"event":"refused"} when the server turns the client away)}
//
// It prints one JSON object a line on standard output, as things happen:
//   {"event":"connected","ms":..,"protocol":"2025-11-25"}
//   {"event":"tools","ms":..,"names":[...]}            ms: connect + tools/list, from the start
//   {"event":"elicited","message":"..","schema":{..}}  the person was asked in the client
//   {"event":"result","result":{..}}                   the tools/call result as the SDK returned it
//   {"event":"paused","confirmation_id":".."}          the call waits for an approver out of band
//   {"event":"status","result":{..}}                   each confirmation_status result while waiting
//   {"event":"tokens","client_id":"..","refresh_token":".."}  (oauth) tokens were saved
//   {"event":"error","message":".."}                   and exit status 1
// and exits 0 when the plan ran through. It bounds itself: 60 s in all.

const plan = JSON.parse(process.argv[2] ?? "{}");
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const fail = (message) => {
  emit({ event: "error", message });
  process.exit(1);
};
setTimeout(() => fail("client.mjs: the plan did not finish within 60 s"), 60_000);

const final = new Set(["executed", "rejected", "expired", "failed", "partially_executed", "cancelled"]);

// answer fills the form the server asked with: every boolean true (the
// approval box), the first value of every enum.
function answer(params) {
  emit({ event: "elicited", message: params?.message ?? "", mode: params?.mode ?? "form", schema: params?.requestedSchema ?? null });
  if (plan.elicit !== "accept") return { action: "decline" };
  const content = {};
  for (const [name, prop] of Object.entries(params?.requestedSchema?.properties ?? {})) {
    if (prop.type === "boolean") content[name] = true;
    else if (Array.isArray(prop.enum) && prop.enum.length > 0) content[name] = prop.enum[0];
  }
  return { action: "accept", content };
}

// The SDK's modules load before the clock starts: the budget is the
// connection's, not Node's module loading.
const v1 =
  plan.sdk === "v2"
    ? null
    : {
        ...(await import("@modelcontextprotocol/sdk/client/index.js")),
        ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
        ...(await import("@modelcontextprotocol/sdk/types.js")),
      };
const v2 = plan.sdk === "v2" ? await import("@modelcontextprotocol/client") : null;

// lines reads standard input a line at a time (the code, then "go").
const stdinLines = (() => {
  let buf = "";
  const waiting = [];
  const ready = [];
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (d) => {
    buf += d;
    for (let i; (i = buf.indexOf("\n")) >= 0; ) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (waiting.length) waiting.shift()(line);
      else ready.push(line);
    }
  });
  return () => (ready.length ? Promise.resolve(ready.shift()) : new Promise((r) => waiting.push(r)));
})();

// provider is the SDK's OAuthClientProvider, in memory.
const provider = plan.oauth && {
  _client: undefined,
  _tokens: undefined,
  _verifier: undefined,
  saved: 0,
  get redirectUrl() {
    return plan.oauth.redirect;
  },
  get clientMetadata() {
    return {
      client_name: "countersign-test-sdk-v1",
      redirect_uris: [plan.oauth.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation() {
    return this._client;
  },
  saveClientInformation(c) {
    this._client = c;
  },
  tokens() {
    return this._tokens;
  },
  saveTokens(t) {
    this._tokens = t;
    this.saved++;
    emit({ event: "tokens", client_id: this._client?.client_id ?? "", refresh_token: t.refresh_token ?? "", count: this.saved });
  },
  redirectToAuthorization(url) {
    emit({ event: "authorize", url: url.toString() });
  },
  saveCodeVerifier(v) {
    this._verifier = v;
  },
  codeVerifier() {
    return this._verifier;
  },
};

async function connectV1() {
  const { Client, StreamableHTTPClientTransport, ElicitRequestSchema } = v1;
  const capabilities = plan.elicit ? { elicitation: { form: {} } } : {};
  const newClient = () => {
    const client = new Client({ name: "countersign-test-sdk-v1", version: "1.32.2" }, { capabilities });
    if (plan.elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => answer(req.params));
    return client;
  };
  const headers = { ...(plan.headers ?? {}) };
  if (!provider) headers.Authorization = `Bearer ${plan.key}`;
  const newTransport = () => new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers }, authProvider: provider || undefined });
  let client = newClient();
  let transport = newTransport();
  try {
    await client.connect(transport);
  } catch (e) {
    if (!provider || !(e instanceof (await import("@modelcontextprotocol/sdk/client/auth.js")).UnauthorizedError)) throw e;
    const code = await stdinLines();
    await transport.finishAuth(code);
    client = newClient();
    transport = newTransport();
    await client.connect(transport);
  }
  return { client, protocol: () => transport.protocolVersion };
}

async function connectV2() {
  const { Client, StreamableHTTPClientTransport } = v2;
  const capabilities = plan.elicit ? { elicitation: { form: {} } } : {};
  const options = { capabilities };
  if (plan.negotiation) options.versionNegotiation = { mode: plan.negotiation };
  if (plan.listChanged) options.listChanged = { tools: { onChanged: () => emit({ event: "tools_changed" }) } };
  const client = new Client({ name: "countersign-test-sdk-v2", version: "2.4.0" }, options);
  if (plan.elicit) client.setRequestHandler("elicitation/create", async (req) => answer(req.params));
  const transport = new StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers: { ...(plan.headers ?? {}), Authorization: `Bearer ${plan.key}` } },
  });
  await client.connect(transport);
  return {
    client,
    protocol: () => client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion,
  };
}

const start = performance.now();
const ms = () => Math.round(performance.now() - start);
let session;
try {
  session = plan.sdk === "v2" ? await connectV2() : await connectV1();
} catch (e) {
  fail(`connect: ${e?.stack ?? e}`);
}
const { client } = session;
emit({ event: "connected", ms: ms(), protocol: session.protocol() ?? null });

try {
  const { tools } = await client.listTools();
  emit({ event: "tools", ms: ms(), names: tools.map((t) => t.name).sort() });
} catch (e) {
  fail(`tools/list: ${e?.stack ?? e}`);
}

if (plan.call) {
  let result;
  try {
    result = await client.callTool({ name: plan.call.name, arguments: plan.call.arguments ?? {} });
  } catch (e) {
    fail(`tools/call ${plan.call.name}: ${e?.stack ?? e}`);
  }
  emit({ event: "result", result });
  // A paused call: follow it through confirmation_status, as the model is told to.
  const sc = result?.structuredContent ?? {};
  if (sc.confirmation_id && !final.has(sc.status) && typeof sc.status === "string") {
    emit({ event: "paused", confirmation_id: sc.confirmation_id });
    const until = Date.now() + 1000 * (plan.waitSeconds ?? 25);
    for (;;) {
      let st;
      try {
        st = await client.callTool({
          name: "confirmation_status",
          arguments: { confirmation_id: sc.confirmation_id, wait_seconds: 2 },
        });
      } catch (e) {
        fail(`confirmation_status: ${e?.stack ?? e}`);
      }
      emit({ event: "status", result: st });
      if (final.has(st?.structuredContent?.status)) break;
      if (Date.now() > until) fail(`confirmation ${sc.confirmation_id} still ${st?.structuredContent?.status} after ${plan.waitSeconds ?? 25} s`);
    }
  }
}

if (provider && plan.refresh) {
  // A spoiled access token: the server answers 401, the SDK refreshes
  // (rotating the refresh token) and retries.
  provider._tokens = { ...provider._tokens, access_token: "csat_spoiled" };
  try {
    const { tools } = await client.listTools();
    emit({ event: "tools", ms: ms(), names: tools.map((t) => t.name).sort() });
  } catch (e) {
    fail(`tools/list after the access token was spoiled: ${e?.stack ?? e}`);
  }
}

if (provider && plan.afterRevoke) {
  emit({ event: "waiting" });
  await stdinLines();
  try {
    await client.listTools();
    fail("tools/list after the revocation succeeded");
  } catch (e) {
    emit({ event: "refused", message: String(e?.message ?? e) });
  }
}

try {
  await Promise.race([client.close(), new Promise((r) => setTimeout(r, 2000))]);
} catch {
  // closing is best effort; the process exits anyway
}
process.exit(0);
