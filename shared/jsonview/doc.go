// Package jsonview renders JSON for people within fixed bounds: the
// arguments and outcomes an approver sees on the approval page, in webhook
// payloads and (later) on the MCP card.
//
// An agent controls those values, so rendering them must not depend on
// their size: a 20 KB body nested 9,990 levels deep once made a 200 MB page.
// Pretty and Compact read the input once, left to right, never recursing
// deeper than Limits.MaxDepth, and stop writing at Limits.MaxBytes. Whatever
// they leave out is replaced by a visible marker containing the word
// "truncated":
//
//   - a string longer than MaxString (or than the room left) is cut and ends
//     with "… (truncated: N bytes)" inside its quotes;
//   - a container deeper than MaxDepth becomes the string
//     "{…} (truncated: deeper than D levels)" (or "[…] ...");
//   - after MaxItems elements, an array gets the element
//     "… (truncated: N more items)" and an object the member
//     "…": "(truncated: N more members)";
//   - when the output is full, the innermost open container gets
//     "… (truncated: the rest is not shown)" and every container is closed.
//
// Pretty is for people: every character package display calls hidden (bidi
// controls, zero-width and other format characters, ...) is written as its
// JSON escape, in keys as in values, so "ACME-\u202E4321-8765\u202C" cannot
// read "ACME-5678-1234". The value is the same; only its spelling changes.
// Compact does so only with Limits.Visible: its output is data by default.
//
// Markers are JSON strings, so the output of valid JSON is valid JSON
// (Compact's is what a webhook can carry in place of the arguments). Input
// that is not JSON is shown as text, cut the same way. The output is never
// longer than MaxBytes, and the work is linear in the input read.
package jsonview
