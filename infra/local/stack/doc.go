// Package stack runs the whole of countersign in one process: the gateway
// and approver handlers behind one HTTP server (through the same API Gateway
// v2 events the Lambdas receive), the embedded bbolt store, the local
// interpreter of statemachines/*.asl.json with the notify, execute and
// finalize tasks invoked in-process, and optionally the demo upstream.
package stack
