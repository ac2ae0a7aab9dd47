// Package mcpapi is the MCP surface (docs/mcp.md): POST /mcp, a
// stateless Streamable HTTP endpoint with JSON responses, built on the
// official Go SDK (github.com/modelcontextprotocol/go-sdk). Like the HTTP
// surface it only translates: every operation tool call goes through the
// call pipeline (calls.Service.Do), which decides, pauses and runs.
//
// Tools are generated per request from the configuration and the
// credential (config.ToolName names them); what a credential may not call
// is not listed, and calling it answers as for an unknown tool.
//
// How a person is asked depends on the credential and the client
// (docs/design.md, The pause). The client's dialog and the card ask the
// person in that client, so they are offered only to a user (a person
// signed in with OAuth) or a key that opted in with ask_in_client; for
// any other key a client that could ask is asked out of band, through the
// approvers' links (Handler.clientOf). Then:
//
//   - A client on protocol 2026-07-28 that declared form elicitation gets an
//     input_required result (a multi round-trip request): one form
//     elicitation naming the operation and its exact arguments, and a
//     requestState sealed with the link key (links.Signer.Seal) that binds
//     the credential, the tool and the operation's binding hash until the
//     call timeout. The retried call carries the answer; the pipeline
//     decides it again and records the answer once (calls.Grant,
//     confirm.Service.Grant: a conditional create), so a replayed, altered,
//     expired or foreign state runs nothing.
//   - A client that declared MCP Apps gets a paused notice; review_pending
//     returns the confirmation card (the ui://countersign/card resource).
//     The token that lets the card decide travels only in the result's
//     _meta, which hosts give the card and not the model; the card calls
//     the app-only card_decide tool with it, and the gateway runs the
//     approved operations itself, once.
//   - A client that declared form elicitation on 2025-11-25 or 2025-06-18 is
//     asked out of band (Client.OutOfBand): the call pauses for the
//     approvers' links, the model is told to call confirmation_status, and
//     the gateway runs the approved call once. (There a server asks with
//     elicitation/create, whose answer comes in another POST that a
//     one-response-per-POST handler cannot wait for.)
//   - Any other client is refused: "Denied (requires_confirmation): <client>
//     (MCP <revision>) can show neither a confirmation dialog nor a card".
//
// On 2025-11-25 and 2025-06-18 a client's name and capabilities come only
// with initialize; the answer gives it an Mcp-Session-Id that seals them
// (session.go), and later requests read them from it. Nothing is stored.
//
// A connection with approval.out_of_band_only pauses for its approvers
// whatever the client, and confirmation_status tells the model the outcome.
//
// A client on 2026-07-28 that declares the tasks extension in a request
// gets, instead of the notice, a task for a call (or batch) its approvers
// decide outside the client (tasks.go): tools/call answers
// resultType "task", and tasks/get, tasks/update and tasks/cancel, which
// the SDK does not know, are answered by screen. A task is a view of its
// confirmation: its id is the confirmation id sealed for the credential,
// its state is read from the store, and tasks/get runs an approved call
// through calls.Service.Execute, as the card does.
//
// run_script is code mode (docs/scripts.md) over Options.Scripts, which
// gatewayapp attaches so that only the functions that run scripts link the
// JavaScript engine. A script's calls that need a person are collected into
// one batch confirmation, and the batch takes the same paths: the
// client's dialog lists every operation with one boolean each (the request
// state carries the batch's id and bindings, and the retried call decides
// the batch once through the lifecycle, then runs the script again and
// returns its result); the card decides it and runs the script again
// (never calls.Service.Execute, which refuses script batches); and a client
// that can do neither has those calls denied inside the script, so no
// batch is left that nobody could answer. Batches touching an
// out_of_band_only connection wait for the approvers.
//
// ServeHTTP (transport.go) refuses foreign origins and, on a loopback
// listener, hosts that do not name the machine; answers batches, methods
// not served and unknown session ids itself; and turns every error into a
// JSON-RPC body. The server declares tools and resources without
// list-changed notifications, so subscriptions/listen ends at once.
//
// Handler is an http.Handler: the gateway serves /mcp with it (on the
// local stack's listener, and on Lambda through httpapi.Lambda, which
// converts API Gateway's events at the edge), and it hands each request
// to the SDK's StreamableHTTPHandler as it came.
package mcpapi
