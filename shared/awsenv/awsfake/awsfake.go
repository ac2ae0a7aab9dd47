// Package awsfake is an in-process stand-in for the AWS services a deployed
// function calls at start and per invocation: S3 (ListObjectsV2 and
// GetObject, PutObject, DeleteObject, path-style), Secrets Manager
// (reads), SNS (Publish)
// and DynamoDB (every call answered {}: no item). It records every call,
// so tests can assert what a cold start did, and the init benchmark can
// run a bootstrap with answers that take microseconds. For tests and
// benchmarks only; it binds where its caller's httptest server binds
// (127.0.0.1).
package awsfake

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Server is the fake. Its zero value is not usable: use New.
type Server struct {
	mu      sync.Mutex
	objects map[string]map[string]object // bucket → key → object
	secrets map[string]string            // Secrets Manager: id → SecretString
	calls   []string                     // "dynamodb:PutItem", "s3:GetObject", ...
	publish []url.Values                 // SNS Publish requests
}

type object struct {
	data     []byte
	etag     string
	modified time.Time
}

// New returns an empty fake.
func New() *Server {
	return &Server{objects: map[string]map[string]object{}, secrets: map[string]string{}}
}

// PutObject stores data under bucket/key, modified at modified.
func (s *Server) PutObject(bucket, key string, data []byte, modified time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.objects[bucket] == nil {
		s.objects[bucket] = map[string]object{}
	}
	sum := md5.Sum(data)
	s.objects[bucket][key] = object{data: data, etag: `"` + hex.EncodeToString(sum[:]) + `"`, modified: modified.UTC()}
}

// PutSecret stores a Secrets Manager secret string under id (name or ARN).
func (s *Server) PutSecret(id, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[id] = value
}

// Object returns the bytes under bucket/key, if any.
func (s *Server) Object(bucket, key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[bucket][key]
	return o.data, ok
}

// Keys returns the keys of bucket, sorted.
func (s *Server) Keys(bucket string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.objects[bucket] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Calls returns the calls made so far ("service:Action"), in order.
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// Published returns the SNS Publish requests received.
func (s *Server) Published() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.publish...)
}

func (s *Server) record(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

// ServeHTTP answers one AWS call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	target := r.Header.Get("X-Amz-Target")
	svc, op, _ := strings.Cut(target, ".")
	switch {
	case strings.HasPrefix(svc, "DynamoDB_"):
		s.record("dynamodb:" + op)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{}`)
	case svc == "secretsmanager":
		s.record("secretsmanager:" + op)
		var in struct{ SecretId string }
		_ = json.Unmarshal(body, &in)
		s.mu.Lock()
		v, ok := s.secrets[in.SecretId]
		s.mu.Unlock()
		if !ok {
			jsonError(w, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": in.SecretId, "SecretString": v, "VersionId": "v1"})
	case target == "" && r.Method == http.MethodPost && strings.Contains(string(body), "Action=Publish"):
		form, _ := url.ParseQuery(string(body))
		s.record("sns:Publish")
		s.mu.Lock()
		s.publish = append(s.publish, form)
		n := len(s.publish)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>m-%d</MessageId></PublishResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></PublishResponse>`, n)
	case target == "" && r.Method == http.MethodGet:
		s.serveS3(w, r)
	case target == "" && r.Method == http.MethodPut:
		bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		s.record("s3:PutObject")
		s.PutObject(bucket, key, body, time.Now())
		s.mu.Lock()
		etag := s.objects[bucket][key].etag
		s.mu.Unlock()
		w.Header().Set("ETag", etag)
	case target == "" && r.Method == http.MethodDelete:
		bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		s.record("s3:DeleteObject")
		s.mu.Lock()
		delete(s.objects[bucket], key)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		s.record("unknown:" + r.Method + " " + r.URL.Path)
		http.Error(w, "awsfake: unknown call", http.StatusNotImplemented)
	}
}

func jsonError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

type listResult struct {
	XMLName     xml.Name   `xml:"ListBucketResult"`
	Name        string     `xml:"Name"`
	Prefix      string     `xml:"Prefix"`
	KeyCount    int        `xml:"KeyCount"`
	IsTruncated bool       `xml:"IsTruncated"`
	Contents    []listItem `xml:"Contents"`
}

type listItem struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int    `xml:"Size"`
}

// serveS3 answers path-style GET /bucket?list-type=2 and GET /bucket/key.
func (s *Server) serveS3(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	s.mu.Lock()
	objects := s.objects[bucket]
	s.mu.Unlock()
	if key == "" {
		s.record("s3:ListBucket")
		prefix := r.URL.Query().Get("prefix")
		res := listResult{Name: bucket, Prefix: prefix}
		s.mu.Lock()
		for k, o := range objects {
			if strings.HasPrefix(k, prefix) {
				res.Contents = append(res.Contents, listItem{Key: k, LastModified: o.modified.Format(time.RFC3339Nano), ETag: o.etag, Size: len(o.data)})
			}
		}
		s.mu.Unlock()
		sort.Slice(res.Contents, func(i, j int) bool { return res.Contents[i].Key < res.Contents[j].Key })
		res.KeyCount = len(res.Contents)
		w.Header().Set("Content-Type", "application/xml")
		xml.NewEncoder(w).Encode(res)
		return
	}
	s.record("s3:GetObject")
	s.mu.Lock()
	o, ok := objects[key]
	s.mu.Unlock()
	switch {
	case !ok:
		s3Error(w, http.StatusNotFound, "NoSuchKey")
	case r.Header.Get("If-Match") != "" && r.Header.Get("If-Match") != o.etag:
		s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
	default:
		w.Header().Set("ETag", o.etag)
		w.Header().Set("Last-Modified", o.modified.Format(http.TimeFormat))
		w.Write(o.data)
	}
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<Error><Code>%s</Code><Message>%s</Message></Error>`, code, code)
}
