//go:build unix

package upstream

import "syscall"

// canCheckConns: a pooled connection can be checked before reuse.
const canCheckConns = true

// connOpen reports whether a pooled connection is still open: nothing to
// read yet, neither the upstream's close nor stray bytes (one recv with
// MSG_PEEK that does not wait).
func connOpen(raw syscall.RawConn) bool {
	if raw == nil {
		return false
	}
	open := false
	var b [1]byte
	err := raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && open
}
