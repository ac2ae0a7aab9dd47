// Package webguard holds the rules every browser-facing surface applies
// the same way: which Host a loopback listener answers (DNS rebinding),
// which POST came from another site (cross-site request forgery), per-form
// tokens bound to a browser, and the headers of every HTML page.
package webguard
