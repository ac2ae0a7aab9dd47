// Package s3config keeps a deployed function's configuration in step with
// an S3 prefix, so that a configuration change needs no rebuild and no
// redeploy.
//
// The configuration directory of docs/configuration.md is mirrored as objects
// under the prefix (s3://<bucket>/<prefix>settings.json,
// <prefix>connections/crm/policy.json, ...), as `countersign config push`
// uploads it. A Source loads it at start, validated by the caller's Load
// (config.LoadFS, exactly as a directory is validated, plus the
// deployment's own rules), and Check re-reads it at most every
// Options.Every: one ListObjectsV2 of the prefix, then a GetObject (with
// If-Match on the listed ETag) of each object whose ETag changed. A
// configuration that fails to load is refused and logged, once per
// distinct content, and the last good one keeps serving; so is one whose
// objects are still being written (modified less than Options.Settle ago:
// a push uploads its files one by one).
//
// Lambda freezes a function between invocations, so nothing runs in the
// background: the function calls Check as an invocation starts, and a
// change is served from the first invocation that starts at least Every
// after the previous check.
package s3config
