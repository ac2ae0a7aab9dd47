// Package tasks holds the handlers the state machines invoke: notify (store
// the task token, send the signed links), execute (run approved operations
// exactly once) and finalize (record rejected, expired or failed). The Lambda
// functions in functions/ wrap them; the local stack calls them in-process
// through the local workflow engine.
package tasks
