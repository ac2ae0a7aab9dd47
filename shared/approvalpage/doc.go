// Package approvalpage renders the page behind an approval link (docs/api.md,
// The approval page): the operations waiting for a person, with one checkbox each
// and the Approve and Reject all buttons; or what became of them (decided,
// expired); or a refusal (bad signature, not found).
//
// The page is plain HTML, written by hand with html/template's escaping (see
// render.go for why not html/template itself): no script, no external asset,
// nothing that submits by itself (link scanners fetch GET links, some even
// submit forms that post themselves). Its only style block carries a fresh
// nonce, which the Content-Security-Policy header returned with the body
// names. Rendering changes nothing; deciding is the POST of the page's form,
// handled elsewhere.
package approvalpage
