// Command countersign is the operator's command-line tool for a countersign
// deployment (docs/design.md, Layout):
//
//	countersign validate DIR
//	countersign propose OPENAPI.{json,yaml} [--connection NAME] [--base-url URL] [--against policy.json] [--write PATH]
//	countersign explain --config DIR --credential ID [--json] [--why-not] CALL
//	countersign keys create|list|revoke|set-choice|set-read-only [--data DIR | --table NAME [--region R] [--endpoint URL]] ...
//	countersign config push DIR --bucket BUCKET [--prefix config/] [--with-credentials] [--dry-run]
//
// validate loads a configuration directory with shared/config exactly as the
// local stack does at start and prints the same messages when it is wrong.
//
// propose reads an OpenAPI 3.0, 3.1 (or 3.2) document and proposes a
// policy.json (docs/configuration.md): every operation as an endpoint, confirm:
// true for DELETE and for writes whose operation id or summary says delete,
// remove, cancel, close, transfer, pay, refund, revoke, purge or destroy. The
// document is read with github.com/pb33f/libopenapi: it was built for 3.1
// from the start (its model is the same for 3.0, 3.1 and 3.2, JSON or
// YAML), keeps paths and operations in document order so the proposal is
// stable, resolves no file or remote references unless told to, and brings
// five small dependencies. kin-openapi's 3.1 support is recent and partial.
//
// explain decides a /v1/calls request body with shared/config and
// shared/policy (Resolve, then Explain: Decide and the rules it went
// through) for a credential of the configuration, without calling
// anything: no upstream, no store, no hooks. --why-not prints those rules
// but the one that decided, each with what it found or "not reached".
//
// keys manages credentials in the local stack's embedded store (--data DIR,
// the bbolt file DIR/countersign.db) or the deployment's DynamoDB table
// (--table NAME, or COUNTERSIGN_TABLE). A new key is printed once; only its
// SHA-256 is stored.
//
// config push validates a configuration directory as a deployed function
// does (secret references checked, not resolved; no ${env:NAME}, which a
// function's environment does not hold) and uploads what changed under the
// stack's configuration bucket, settings.json last, then deletes what the
// directory no longer holds. credentials.json stays on this machine unless
// --with-credentials (and then only with hashed keys).
//
// Every subcommand runs through run(args, stdout, stderr), which returns the
// exit status: 0 for success, 1 when the command failed (an invalid
// configuration, a store error), 2 for a usage mistake.
package main
