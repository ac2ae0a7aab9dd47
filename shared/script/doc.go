// Package script is code mode: an agent submits a JavaScript program whose
// one host function, call(connection, method, path, {query, body}), goes
// through the call pipeline (shared/calls) like any other call.
//
// The first run decides every call: calls that need no confirmation run at
// once, calls that need it are not run but collected ({pending: true}), and
// denied calls are denied to the script. If anything was collected, the
// script's journal (every call in order with its binding, state and the
// value call() returned) is stored and one batch confirmation (kind
// script, 30 minutes) lists the collected calls. After approval the gateway
// runs the script again (Service.Rerun, the batch workflow's Execute task):
// each call is matched with the journal by position and binding; journaled
// calls return their stored values without calling anything, approved
// calls run exactly once (calls.Service.ExecuteOne), cleared calls return
// {rejected: true}, and a call that differs from the journal stops the
// script (script_diverged) before anything else runs.
//
// Scripts run in goja with nothing but plain JavaScript, call() and
// console.log: no timers, network, file system, require, eval or Function
// constructor. Each run is bounded by Limits (time, calls, script size,
// result size, memory); a script that breaks one, throws or does not parse
// fails with its line and column and leaves nothing pending.
//
// Only the gateway and execute functions and the local stack link this
// package (through shared/app/gatewayapp): the HTTP surface and the execute
// task reach it through small interfaces.
package script
