package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// A candidate policy (settings.json "candidate_config": a directory inside
// the configuration, such as "candidate") is a whole configuration loaded
// and validated like the live one, from the same place (a directory, or
// the deployed stack's S3 prefix): every call is decided by it too, and
// only recorded where it differs (calls.Service, policy.shadow_differs);
// the live configuration is the one enforced. Promoting the candidate is
// a config push of it.

// candidatePath reads candidate_config: a relative, slash-separated path
// inside the configuration, without "." or ".." segments.
func candidatePath(s *src, raw json.RawMessage) string {
	var p string
	if !s.decode("candidate_config", raw, &p) {
		return ""
	}
	if p == "" || p == "." || !fs.ValidPath(p) || strings.HasPrefix(p, "/") {
		s.errf("candidate_config", "%q is not a directory inside the configuration: give a relative path such as \"candidate\"", p)
		return ""
	}
	return p
}

// loadCandidate loads the candidate configuration at rel inside fsys. No
// directory on its way may be a symbolic link: it could lead out of the
// configuration, and config push uploads directories, not links, so the
// candidate deployed would not be the one checked here.
func loadCandidate(fsys fs.FS, l *loader, rel string, opts *LoadOptions) (*Config, error) {
	if lfs, ok := fsys.(fs.ReadLinkFS); ok {
		segs := strings.Split(rel, "/")
		for i := range segs {
			at := strings.Join(segs[:i+1], "/")
			if fi, err := lfs.Lstat(at); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, &Error{File: l.where("settings.json"), Path: "candidate_config",
					Msg: fmt.Sprintf("%s is a symbolic link: the candidate must be a directory inside the configuration", at)}
			}
		}
	}
	sub, err := fs.Sub(fsys, rel)
	if err != nil {
		return nil, &Error{File: l.where(rel), Msg: "candidate_config: " + err.Error()}
	}
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	o.candidate = true
	cand, err := LoadFS(sub, l.where(rel), &o)
	if err != nil {
		return nil, errors.Join(&Error{File: l.where("settings.json"), Path: "candidate_config", Msg: "the candidate configuration " + rel + " is not valid:"}, err)
	}
	return cand, nil
}
