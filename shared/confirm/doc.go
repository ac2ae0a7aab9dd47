// Package confirm is the confirmation lifecycle, and its one owner: create a
// pending confirmation and start its workflow, record an approver's answer
// once, redeem an approval once for the exact call it was bound to, execute
// each approved operation exactly once, run or dismiss a review item, end a
// script batch, and finalize what the workflow saw end.
//
// Which event may happen in which status is one table (lifecycle.go: Next,
// with a test that lists every pair); a refusal's fault is built from it
// (Transition.Err). Status is always derived from the stored record and the
// clock (Effective). The upstream call is given to the lifecycle (Upstream),
// and each transition writes its own audit record and approver event, so
// each is recorded and announced once whatever surface caused it.
package confirm
