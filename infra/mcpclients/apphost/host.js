// The MCP Apps host of TestCardInAppBridge: the official AppBridge of
// @modelcontextprotocol/ext-apps, as claude.ai and ChatGPT embed an app.
// The test bundles this file with esbuild (into a temporary directory) and
// serves it with a page that runs it; what the page needs comes from the
// test's server:
//
//   /pending  the review_pending call as a host makes it: {arguments, result}
//   /call     a tools/call of the card, forwarded to the stack's /mcp
//
// The card is an iframe from another origin (the test's second server), in
// a sandbox, its only channel to the host postMessage. The host records
// what the card asked (window.hostLog) and, as the query string says,
// refuses the first ui/message: ?refuse=error answers with a JSON-RPC
// error, ?refuse=result with {isError: true} (both are how a host says no).
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const query = new URLSearchParams(location.search);
const log = (window.hostLog = { initialized: false, calls: [], messages: [], answered: [], contexts: [], sent: [], errors: [] });
let refuse = query.get("refuse") || "";

async function main() {
  const pending = await (await fetch("/pending")).json();

  const frame = document.createElement("iframe");
  frame.id = "card";
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  frame.style.width = "800px";
  frame.style.height = "1400px";
  document.body.appendChild(frame);

  const bridge = new AppBridge(
    null,
    { name: "countersign-test-host", version: "1" },
    { serverTools: {}, logging: {}, updateModelContext: { text: {} }, message: { text: {} } },
    { hostContext: { theme: "light", displayMode: "inline" } },
  );
  bridge.oninitialized = async () => {
    log.initialized = true;
    await bridge.sendToolInput({ arguments: pending.arguments });
    await bridge.sendToolResult(pending.result);
  };
  bridge.oncalltool = async (params) => {
    log.calls.push(params.name);
    const r = await fetch("/call", { method: "POST", body: JSON.stringify(params) });
    if (!r.ok) throw new Error("the test host could not forward the call: " + r.status);
    return r.json();
  };
  bridge.onupdatemodelcontext = async (params) => {
    log.contexts.push(params);
    return {};
  };
  bridge.onmessage = async (params) => {
    log.messages.push(params);
    const how = refuse;
    refuse = "";
    if (how === "error") throw new Error("this conversation is closed");
    if (how === "result") return { isError: true };
    return {};
  };
  bridge.onsizechange = () => {};

  // The bridge's answers to the card, as sent: an error the bridge itself
  // answers (-32602 for params that do not match the MCP Apps types) is
  // recorded here, and the answers to ui/message once they are posted.
  const transport = new PostMessageTransport(frame.contentWindow, frame.contentWindow);
  const send = transport.send.bind(transport);
  const messageIds = new Set();
  transport.send = async (message, options) => {
    await send(message, options);
    log.sent.push(message);
    if (message.error) log.errors.push(message.error);
    if (message.method === undefined && messageIds.has(message.id)) log.answered.push(message);
  };
  await bridge.connect(transport);
  const receive = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message.method === "ui/message") messageIds.add(message.id);
    receive(message, extra);
  };
  frame.src = query.get("card");
}

main().catch((e) => {
  log.errors.push({ code: 0, message: "host: " + ((e && e.stack) || e) });
});
