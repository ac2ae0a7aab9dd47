//go:build !unix

package upstream

import "syscall"

// canCheckConns: without a way to check a pooled connection, every
// request goes to http.Transport.
const canCheckConns = false

func connOpen(syscall.RawConn) bool { return false }
