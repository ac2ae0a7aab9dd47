package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a signature's timestamp may be from now when
// VerifySignature is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// ErrBadWebhookSignature is returned (wrapped) by VerifySignature.
var ErrBadWebhookSignature = errors.New("notify: bad webhook signature")

// VerifySignature checks a Countersign-Signature header value against body,
// for receivers. The header is "t=<unix>,v1=<hex>" (several v1 values are
// allowed, any one matching suffices, for secret rotation; unknown schemes
// are ignored). The timestamp must be within tolerance of now (tolerance <= 0
// means DefaultTolerance), which bounds replays. The MAC is compared in
// constant time.
func VerifySignature(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: malformed header", ErrBadWebhookSignature)
		}
		switch k {
		case "t":
			if ts != "" {
				return fmt.Errorf("%w: t given twice", ErrBadWebhookSignature)
			}
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil && len(sig) == sha256.Size {
				sigs = append(sigs, sig)
			}
		}
	}
	if ts == "" {
		return fmt.Errorf("%w: no timestamp", ErrBadWebhookSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: malformed timestamp", ErrBadWebhookSignature)
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: no v1 signature", ErrBadWebhookSignature)
	}
	want, _ := hex.DecodeString(hexMAC(secret, ts, body))
	ok := false
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("%w: signature does not match", ErrBadWebhookSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp %s is outside the tolerance of %s", ErrBadWebhookSignature, ts, tolerance)
	}
	return nil
}

func hexMAC(secret, ts string, body []byte) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
