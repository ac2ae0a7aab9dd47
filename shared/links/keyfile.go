package links

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// keyFile is the JSON form of a key on disk: {"kid": "...", "secret": "<base64>"}.
type keyFile struct {
	KID    string `json:"kid"`
	Secret string `json:"secret"`
}

// LoadOrCreateKey returns the key stored at path, a JSON file
// {"kid": "...", "secret": "<standard base64>"}. If the file does not exist it
// generates a key (32 random bytes, kid "k" + 8 hex characters), writes it
// with mode 0600 atomically (a temporary file in the same directory, then
// linked or renamed into place; the parent directory is created with mode
// 0700 if needed) and returns it. If another process creates the file first,
// its key is returned instead, so concurrent starts agree on one key.
// It is meant for the local stack; deployed functions read their key from
// Secrets Manager.
func LoadOrCreateKey(path string) (Key, error) {
	k, err := loadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	k, err = newKey()
	if err != nil {
		return Key{}, fmt.Errorf("links: create key %s: %w", path, err)
	}
	switch err := writeKey(path, k); {
	case errors.Is(err, fs.ErrExist):
		return loadKey(path) // lost a race with another process: use its key
	case err != nil:
		return Key{}, fmt.Errorf("links: create key %s: %w", path, err)
	}
	return k, nil
}

func loadKey(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("links: load key: %w", err)
	}
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Key{}, fmt.Errorf("links: load key %s: not valid JSON: %w", path, err)
	}
	secret, err := base64.StdEncoding.DecodeString(f.Secret)
	if err != nil {
		if secret, err = base64.RawStdEncoding.DecodeString(f.Secret); err != nil {
			return Key{}, fmt.Errorf("links: load key %s: field secret: not base64", path)
		}
	}
	k := Key{ID: f.KID, Secret: secret}
	if err := checkKID(k.ID); err != nil {
		return Key{}, fmt.Errorf("links: load key %s: field kid: %w", path, err)
	}
	if len(secret) < MinSecretLen {
		return Key{}, fmt.Errorf("links: load key %s: field secret: %d bytes, want at least %d", path, len(secret), MinSecretLen)
	}
	return k, nil
}

func newKey() (Key, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, err
	}
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return Key{}, err
	}
	return Key{ID: "k" + hex.EncodeToString(id), Secret: secret}, nil
}

// writeKey writes k to path without ever exposing a partial file, and without
// replacing a file that appeared meanwhile (fs.ErrExist), where the
// filesystem supports hard links.
func writeKey(path string, k Key) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(keyFile{KID: k.ID, Secret: base64.StdEncoding.EncodeToString(k.Secret)}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".countersign-key-*.tmp")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // after a link or a failure; a no-op after a rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// No hard links here (some filesystems): fall back to a rename,
		// which is atomic but replaces a file created meanwhile.
		if err := os.Rename(tmpName, path); err != nil {
			return err
		}
	}
	if d, err := os.Open(dir); err == nil { // persist the directory entry; best effort
		d.Sync()
		d.Close()
	}
	return nil
}
