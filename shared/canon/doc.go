// Package canon produces the canonical JSON form of RFC 8785 (JSON
// Canonicalization Scheme) and the binding hash that ties an approval to the
// credential, the operation and its exact arguments (docs/design.md, The pause).
//
// The canonicalization itself is github.com/gowebpki/jcs, a port of the RFC's
// reference implementation; this package adds the conversion from Go values
// and the binding.
package canon
