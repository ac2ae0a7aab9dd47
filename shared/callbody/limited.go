package callbody

import "io"

// ReadLimited reads at most max+1 bytes of r (one more than allowed, so a
// larger body is seen as such) into a buffer the size the sender declared
// (declared < 0: unknown), growing it only when the declaration was short.
// The gateway reads requests with it, the upstream client answers.
func ReadLimited(r io.Reader, declared, max int64) ([]byte, error) {
	size := int64(512)
	if declared >= 0 {
		size = min(declared, max) + 1 // +1: EOF is seen without growing
	}
	b := make([]byte, 0, size)
	lr := io.LimitReader(r, max+1)
	for {
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
