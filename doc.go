// Package countersign holds the domain: the records countersign keeps
// (credentials and the clients seen with them, confirmations and their
// operations and outcomes, idempotent calls, quotas, the audit trail and
// script runs, and what a script run gave) and their states. It imports
// nothing from the rest of the project but the decision engine's value
// types (shared/policy) and the fault codes (shared/fault); the store
// adapters (shared/store/embedded, shared/store/dynamostore) keep these
// records, and the pipeline, the workflow and the surfaces pass them around.
package countersign
