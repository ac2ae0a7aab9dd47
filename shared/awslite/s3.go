package awslite

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/encoding/httpbinding"
)

// S3 reads objects: ListObjectsV2 and GetObject. It is safe for
// concurrent use.
type S3 struct{ c client }

// NewS3 returns an S3 client.
func NewS3(o Options) *S3 {
	// S3 signs the path as sent (escaped once), unlike the other services.
	return &S3{c: newClient("s3", o, func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true })}
}

// ListObjectsV2Input is one page's request.
type ListObjectsV2Input struct {
	Bucket, Prefix string
	// ContinuationToken is the previous page's NextContinuationToken.
	ContinuationToken string
	// MaxKeys bounds the page (S3's default and most: 1,000); 0 means
	// S3's default.
	MaxKeys int
}

// Object is one listed object.
type Object struct {
	Key          string    `xml:"Key"`
	ETag         string    `xml:"ETag"`
	Size         int64     `xml:"Size"`
	LastModified time.Time `xml:"LastModified"`
}

// ListObjectsV2Output is one page of a listing.
type ListObjectsV2Output struct {
	Contents []Object `xml:"Contents"`
	// IsTruncated says more pages follow, from NextContinuationToken.
	IsTruncated           bool   `xml:"IsTruncated"`
	NextContinuationToken string `xml:"NextContinuationToken"`
}

// ListObjectsV2 lists one page (up to 1,000 keys) of the objects under
// in.Prefix.
func (s *S3) ListObjectsV2(ctx context.Context, in *ListObjectsV2Input) (*ListObjectsV2Output, error) {
	q := url.Values{"list-type": {"2"}}
	if in.Prefix != "" {
		q.Set("prefix", in.Prefix)
	}
	if in.ContinuationToken != "" {
		q.Set("continuation-token", in.ContinuationToken)
	}
	if in.MaxKeys > 0 {
		q.Set("max-keys", strconv.Itoa(in.MaxKeys))
	}
	out := new(ListObjectsV2Output)
	err := s.c.do(ctx, request{
		op: "ListObjectsV2",
		build: func(ctx context.Context) (*http.Request, error) {
			return s.newRequest(ctx, in.Bucket, "", q)
		},
		decode: func(resp *http.Response) error {
			data, err := readAnswer(resp)
			if err != nil {
				return err
			}
			return xml.Unmarshal(data, out)
		},
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetObjectInput names the object to read.
type GetObjectInput struct {
	Bucket, Key string
	// IfMatch, when set, is the ETag the object must have: another is
	// the error PreconditionFailed.
	IfMatch string
}

// GetObjectOutput is an object read: its caller closes Body.
type GetObjectOutput struct {
	Body io.ReadCloser
	ETag string
}

// GetObject reads an object. A missing one is the error NoSuchKey; one
// whose ETag is not in.IfMatch, PreconditionFailed.
func (s *S3) GetObject(ctx context.Context, in *GetObjectInput) (*GetObjectOutput, error) {
	out := new(GetObjectOutput)
	err := s.c.do(ctx, request{
		op: "GetObject",
		build: func(ctx context.Context) (*http.Request, error) {
			req, err := s.newRequest(ctx, in.Bucket, in.Key, nil)
			if err == nil && in.IfMatch != "" {
				req.Header.Set("If-Match", in.IfMatch)
			}
			return req, err
		},
		keepBody: true,
		decode: func(resp *http.Response) error {
			out.Body, out.ETag = resp.Body, resp.Header.Get("ETag")
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// newRequest is a GET of key in bucket (the bucket itself when key is
// empty): path-style on a custom endpoint or for a bucket name that is no
// DNS label, else virtual-hosted.
func (s *S3) newRequest(ctx context.Context, bucket, key string, q url.Values) (*http.Request, error) {
	if bucket == "" {
		return nil, errors.New("no bucket")
	}
	base := s.c.endpoint
	var path, raw string
	if s.c.custom || !virtualHostable(bucket) {
		if base == "" {
			base = "https://" + s.c.host("s3")
		}
		path, raw = "/"+bucket, "/"+httpbinding.EscapePath(bucket, true)
	} else {
		base = "https://" + bucket + "." + s.c.host("s3")
	}
	switch {
	case key != "":
		path, raw = path+"/"+key, raw+"/"+httpbinding.EscapePath(key, false)
	case path == "":
		path, raw = "/", "/"
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	// An endpoint with a path keeps it in front.
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/")+path, strings.TrimRight(u.EscapedPath(), "/")+raw
	if q != nil {
		u.RawQuery = q.Encode()
	}
	return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
}

// virtualHostable reports whether bucket can be a host name's first label
// (lower-case letters, digits and hyphens, 3 to 63 of them, no dots: a
// dotted name would not match the TLS certificate's wildcard).
func virtualHostable(bucket string) bool {
	if len(bucket) < 3 || len(bucket) > 63 || bucket[0] == '-' || bucket[len(bucket)-1] == '-' {
		return false
	}
	for _, r := range bucket {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
