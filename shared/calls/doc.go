// Package calls is the call pipeline, transport-free: authenticate a key,
// resolve and decide a call (hooks included), deny it (queuing a review item
// for review_required), execute it, pause it (create the confirmation),
// redeem an approval, use a person's answer given in the client (an MCP
// input request) once, and record the call and its log line. What happens
// to a confirmation after it is created is the lifecycle's (shared/confirm):
// the pipeline calls it once per use case and gives it the upstream to run
// approved operations with (Replayer); the lifecycle records and announces
// each transition.
//
// Service's methods are grouped by the use case a consumer needs; each
// consumer declares the small interface it uses (as shared/script's
// Pipeline and shared/tasks' Executor do):
//
//   - Calling (agents: /v1/calls, REST, MCP): Authenticate, RecordClient,
//     Connections, Do, Bind, Explain, RequestHash, Idempotent, Reserve,
//     Confirmation (a confirmation's status for its credential), Current.
//   - Answering (approvers: the approval page, the MCP card; the workflow's
//     execute task): Lookup, Answer, Execute.
//   - Scripts (code mode): Do, Bind, Reserve, Confirmation, Lookup,
//     NewConfirmationID, CreateBatch, ExecuteOne, EndScript, Current.
//   - Operating (operators): Reviews, Review, RunReview, DismissReview,
//     Confirmations, Credentials, RunTool.
//   - Configuration (the mains, the local stack): SetConfig, WithConfig,
//     Current.
//
// Nothing here knows about HTTP responses.
package calls
