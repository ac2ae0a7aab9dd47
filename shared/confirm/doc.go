// Package confirm is the confirmation lifecycle: create a pending
// confirmation and start its workflow, record a person's decision once,
// redeem an approval once for the exact call it was bound to, execute each
// approved operation exactly once, and finalize what the workflow saw end.
// Status is always derived from the stored record and the clock (Effective).
package confirm
