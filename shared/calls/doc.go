// Package calls is the call pipeline, transport-free: authenticate a key,
// resolve and decide a call (hooks included), deny it (queuing a review item
// for review_required), execute it, pause it (create the confirmation),
// redeem an approval, use a person's answer given in the client (an MCP
// input request) once, run approved operations exactly once, and record the
// outcome and the log line.
//
// Every surface is a thin adapter over Service: /v1/calls and /v1/rest in
// shared/httpapi, and later MCP, code mode and the operator surface. They
// decode their input into a Call, call Service.Do with the Options their
// surface needs, and render the Result or the *fault.Error. Nothing here
// knows about HTTP responses.
package calls
