// Package httpapi is the HTTP contract of docs/api.md as net/http
// handlers. Gateway serves the agents (/v1/calls, /v1/rest, /v1/scripts,
// /v1/confirmations, /v1/credentials/me, /healthz, and /mcp through the
// MCP surface), Approver the approval page (/approve/<id>) and Operator the
// operator routes and page. Each reads *http.Request and writes
// http.ResponseWriter, reaching the pipeline through the small interface
// it declares (Pipeline, Decider, Operations).
//
// The local stack serves them with net/http; on AWS, Lambda converts the
// API Gateway HTTP API (payload 2.0) events at the edge: the one place
// events are turned into requests and responses back into events.
package httpapi
