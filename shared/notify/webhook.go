package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// SignatureHeader is the header carrying a webhook body's signature.
const SignatureHeader = "Countersign-Signature"

// Webhook formats.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
)

// DefaultBackoff is the wait before each retry when Webhook.Backoff is nil:
// five attempts in all.
var DefaultBackoff = []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}

// defaultClient is used when Webhook.Client is nil. It does not follow
// redirects: a signed POST goes to the configured URL or fails. It keeps up
// to 32 idle connections per host (http.DefaultTransport keeps 2): every
// pause notifies the same few receivers, and concurrent pauses would
// otherwise open a new connection for nearly every event.
var defaultClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: webhookTransport(),
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

func webhookTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return t
}

// Webhook posts events to a URL (settings.json approvers.webhooks[]).
// Every request carries Content-Type: application/json and
// Countersign-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">.
// Neither the secret nor the URL (a Slack URL is itself a secret) appears in
// errors. A Webhook is safe for concurrent use once configured.
type Webhook struct {
	// Approver is the webhook's name in settings.json, used as the approver
	// name of its links (a=). (It cannot be called Name: that is the
	// Channel method.)
	Approver string
	// URL receives the POSTs.
	URL string
	// Format is "json" (the Event as JSON; "" means json) or "slack" (a
	// Slack message with the summary and a button to the approval link).
	Format string
	// Secret signs each request.
	Secret string
	// Client sends the requests; nil means a client with a 10 s timeout
	// that does not follow redirects.
	Client *http.Client
	// Now is the clock for the signature timestamp; nil means time.Now.
	Now func() time.Time
	// Backoff is the wait before each retry; nil means DefaultBackoff (1s, 2s,
	// 4s, 8s: five attempts). An empty non-nil slice means one attempt.
	Backoff []time.Duration
}

// Name returns the webhook's approver name.
func (w *Webhook) Name() string { return w.Approver }

// Send posts ev (with only this webhook's links), bounded to
// MaxPayloadBytes (see boundEvent). A 2xx answer is success.
// Transport errors, 429 and 5xx are retried after each Backoff wait; any
// other status is final. It gives up when the attempts run out or ctx ends.
// The signature is computed afresh for each attempt.
func (w *Webhook) Send(ctx context.Context, ev Event) error {
	ev = ownLinks(ev, w.Approver)
	var body []byte
	var err error
	switch w.Format {
	case FormatJSON, "":
		body, err = encodeBounded(ev, func(e Event) ([]byte, error) { return marshal(e) })
	case FormatSlack:
		body, err = encodeBounded(ev, func(e Event) ([]byte, error) { return marshal(slackMessageFor(e)) })
	default:
		return fmt.Errorf("webhook %s: unknown format %q", w.Approver, w.Format)
	}
	if err != nil {
		return fmt.Errorf("webhook %s: encode %s: %w", w.Approver, ev.Type, err)
	}
	backoff := w.Backoff
	if backoff == nil {
		backoff = DefaultBackoff
	}
	attempts := len(backoff) + 1
	for i := 0; ; i++ {
		retry, err := w.post(ctx, body)
		if err == nil {
			return nil
		}
		err = fmt.Errorf("webhook %s: %s: attempt %d of %d: %w", w.Approver, ev.Type, i+1, attempts, err)
		if !retry || i == len(backoff) {
			return err
		}
		t := time.NewTimer(backoff[i])
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (then gave up: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// marshal encodes v as JSON without escaping <, > and & (a webhook body is
// not HTML), so a body is no larger than its text: see encodeBounded.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// post makes one attempt and says whether a failure may be retried.
func (w *Webhook) post(ctx context.Context, body []byte) (retry bool, err error) {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return false, errors.New("invalid webhook URL (want http or https)") // the URL may be secret: not quoted
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "countersign-webhook/1")
	req.Header.Set(SignatureHeader, Signature(w.Secret, now(), body))
	client := w.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
		var uerr *url.Error // its message holds the URL: keep only the cause
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return true, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, nil
	case code == http.StatusTooManyRequests || code >= 500:
		return true, fmt.Errorf("status %d", code)
	default:
		return false, fmt.Errorf("status %d (not retried)", code)
	}
}

// Signature returns the Countersign-Signature value for body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256 of "<unix>.<body>" keyed with secret>".
func Signature(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hexMAC(secret, ts, body)
}
