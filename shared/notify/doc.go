// Package notify tells approvers that a confirmation needs them, and what
// became of it (docs/api.md, Webhooks).
//
// An Event is one of confirmation.requested (with the approver's signed
// link), confirmation.decided, confirmation.expired and
// confirmation.executed. A Channel delivers events to one approver: Console
// prints them (the local stack) and Webhook posts them, signed with
// Countersign-Signature, as the event's JSON or as a Slack message, retrying
// transient failures. VerifySignature checks that header on the receiving
// side. A webhook body is never larger than MaxPayloadBytes: arguments and
// outcomes are rendered by shared/jsonview within each operation's share,
// strings are clipped, at most MaxEventOperations operations are listed, and
// what was cut says "truncated" (EventOperation.Truncated,
// EventConfirmation.OmittedOperations).
//
// A Dispatcher fans an event out to every channel: Notify in the background
// (the local stack), NotifyWait when the work must finish before returning
// (a Lambda). Each channel only ever sends links addressed to its own
// approver name; NotifyEach builds that link per channel.
package notify
