package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Signature identifies one version of a config file (spec §3.2): its resolved
// path, modification time, size and the SHA-256 of its whole content. Because
// the content is hashed on every check, a same-size edit within the same
// mtime granularity is still detected.
type Signature struct {
	Path    string    // absolute, symlinks followed
	ModTime time.Time // of the resolved file
	Size    int64
	SHA256  string // lower-case hex of the full content
}

// FileSignature computes the Signature of the file at path. The path is made
// absolute and symlinks are followed, so a link retargeted to another file
// changes the signature. The whole file is read and hashed every time. A
// missing file gives an error for which errors.Is(err, fs.ErrNotExist) holds.
func FileSignature(path string) (Signature, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Signature{}, fmt.Errorf("signature of %s: %w", path, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Signature{}, fmt.Errorf("signature of %s: %w", path, err)
	}
	f, err := os.Open(resolved)
	if err != nil {
		return Signature{}, fmt.Errorf("signature of %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Signature{}, fmt.Errorf("signature of %s: %w", path, err)
	}
	if st.IsDir() {
		return Signature{}, fmt.Errorf("signature of %s: is a directory", path)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Signature{}, fmt.Errorf("signature of %s: %w", path, err)
	}
	return Signature{
		Path:    resolved,
		ModTime: st.ModTime(),
		Size:    n,
		SHA256:  hex.EncodeToString(h.Sum(nil)),
	}, nil
}

// Equal reports whether s and o describe the same file version: same path,
// modification time (compared with time.Time.Equal), size and hash.
func (s Signature) Equal(o Signature) bool {
	return s.Path == o.Path && s.ModTime.Equal(o.ModTime) && s.Size == o.Size && s.SHA256 == o.SHA256
}

// IsZero reports whether s is the zero Signature (no file was fingerprinted).
func (s Signature) IsZero() bool {
	return s == Signature{}
}
