package callbody

import "io"

// firstRead is the buffer a body is first read into: what the sender
// declares never sizes it, so a declaration costs nothing until the bytes
// arrive.
const firstRead = 4 << 10

// ReadLimited reads at most max+1 bytes of r (one more than allowed, so a
// larger body is seen as such). The buffer grows as bytes arrive: declared
// (the sender's Content-Length; < 0: unknown) only makes it smaller for a
// body declared short, never larger, so a socket that declares 1 MiB and
// sends nothing holds a few KiB. The gateway reads requests with it, the
// upstream client answers.
func ReadLimited(r io.Reader, declared, max int64) ([]byte, error) {
	size := int64(firstRead)
	if declared >= 0 {
		size = min(size, declared+1) // +1: EOF is seen without growing
	}
	b := make([]byte, 0, min(size, max+1))
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
