// Package operatorpage renders the operator page (GET /operator): the
// login form, and for a signed-in operator the review queue with Run and
// Dismiss, the pending confirmations, the credentials with their last
// client, and the recent audit records. It looks like the approval page
// (shared/approvalpage) and holds to the same rules: every value escaped as
// html/template escapes it (the page is written by hand, and checked
// against html/template's rendering of testdata/page.tmpl, so that the
// operator function does not link text/template), no script, a strict
// Content-Security-Policy with a per-render style nonce, and every form a
// POST carrying a CSRF token.
package operatorpage
