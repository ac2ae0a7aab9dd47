// Package workflow defines the Workflow interface the confirmation lifecycle
// uses to wait for a person: an execution of a state machine in
// statemachines/ whose Task hands a task token to the notify function and
// waits, with a timeout, for SendTaskSuccess or SendTaskFailure.
package workflow
