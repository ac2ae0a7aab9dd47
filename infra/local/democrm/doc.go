// Package democrm is the demo upstream: a small in-memory CRM with contacts, accounts and
// payments that the local stack serves on 127.0.0.1:8081 for the crm connection in
// infra/config, and that tests use to see exactly what the gateway sent.
//
// Routes (JSON in and out; errors are {"error": "..."}):
//
//	GET    /contacts                  {"contacts": [...]}
//	POST   /contacts                  {"name", "email"} → 201 contact
//	POST   /contacts/purge            deletes every archived contact → {"purged": [ids]}
//	GET    /contacts/{id}             contact
//	PATCH  /contacts/{id}             {"name"?, "email"?} → contact
//	DELETE /contacts/{id}             204, then 404
//	POST   /contacts/{id}/archive     contact with "archived": true
//	GET    /payments                  {"payments": [...]}
//	POST   /payments                  {"amount", "currency", "to"} → 201 payment with an id
//	POST   /payouts                   the same as POST /payments (the demo policy wants two people for it)
//	GET    /accounts/{id}             account
//	POST   /accounts/{id}/close       account with "status": "closed"; 409 when already closed
//	DELETE /accounts/{id}             204, then 404
//
// A write (any method but GET and HEAD) carrying an Idempotency-Key that the server has
// already answered gets the first response again, with Idempotent-Replayed: true, and the
// work is not done twice. Every request is recorded, replays included, for Requests and
// Count, and for a person:
//
//	GET    /_received                 {"requests": [{"method", "path", "query", "idempotency_key", "replayed"}],
//	                                   "writes": {"DELETE /contacts/12": 1}}: what arrived, oldest first, and
//	                                   how many times each write did its work (replays not counted)
//
// With SetLog the server also prints one line per request received, so that a person
// running the local stack sees each call the gateway sent, and sees it once.
package democrm
