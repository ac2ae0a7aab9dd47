// Package httpapi is the HTTP contract of docs/api.md on API Gateway HTTP API
// (payload 2.0) events. Gateway serves the agents (/v1/calls, /v1/rest,
// /v1/confirmations, /v1/credentials/me, /healthz) and Approver serves the
// approval page (/approve/<id>). The Lambdas hand them API Gateway's events;
// the local stack translates net/http requests into the same events
// (ServeHTTP), so both run one code path.
package httpapi
