package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Writes of extensions_config.json (spec §4.5): one read-modify-write at a
// time, in this process (a mutex per file) and across processes (an
// advisory flock on the sidecar ".<name>.lock" beside the file), and an
// atomic replacement that leaves the old file intact on any failure.

var (
	fileLocksMu sync.Mutex
	fileLocks   = map[string]*sync.Mutex{}
)

// processLock returns the process-wide mutex of the file at abs.
func processLock(abs string) *sync.Mutex {
	fileLocksMu.Lock()
	defer fileLocksMu.Unlock()
	mu := fileLocks[abs]
	if mu == nil {
		mu = &sync.Mutex{}
		fileLocks[abs] = mu
	}
	return mu
}

// WithReadLock runs fn holding only path's process-wide lock. Readers need
// no file lock: writes replace the file by rename, so another process's
// reader sees the old file or the new one whole, and a read works where
// the directory is read-only (a Kubernetes ConfigMap).
func WithReadLock(path string, fn func() error) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	mu := processLock(abs)
	mu.Lock()
	defer mu.Unlock()
	return fn()
}

// WithLock runs fn holding path's process-wide lock and its sidecar file
// lock. Every writer of the file goes through it.
func WithLock(path string, fn func() error) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return WithReadLock(abs, func() error { return withFileLock(abs, fn) })
}

// withFileLock runs fn holding the sidecar lock file of abs.
func withFileLock(abs string, fn func() error) error {
	lockPath := filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".lock")
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open lock file: %w", err)
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", filepath.Base(lockPath), err)
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	return fn()
}

// beforeRename, when set, runs between the temp file's fsync and the rename
// (tests inject a crash there).
var (
	beforeRenameMu sync.Mutex
	beforeRename   func(target string)
)

var busyWarned sync.Map // target path → struct{}: EBUSY fallback warned

// rename is os.Rename; tests make it fail.
var rename = os.Rename

// WriteFileAtomic replaces path with data: a temp file in the same
// directory (".<name>.<random>.tmp") with the existing file's permission
// bits, fsynced, renamed over the target (for a symlink, over the file it
// points to, so the link stays), then the directory fsynced. When the rename
// fails with EBUSY (a Docker bind-mounted file) it overwrites the file in
// place instead, warning once per file. On any other failure the old file
// is intact and the temp file is removed.
func WriteFileAtomic(path string, data []byte, log *slog.Logger) error {
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir, base := filepath.Dir(target), filepath.Base(target)
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(target); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := writeSyncClose(tmp, data); err != nil {
		return err
	}
	beforeRenameMu.Lock()
	hook := beforeRename
	beforeRenameMu.Unlock()
	if hook != nil {
		hook(target)
	}
	if err := rename(tmp.Name(), target); err != nil {
		if !errors.Is(err, syscall.EBUSY) {
			return err
		}
		if _, warned := busyWarned.LoadOrStore(target, struct{}{}); !warned && log != nil {
			log.Warn("cannot replace the config file atomically (it is busy, as a bind mount is); overwriting it in place", "path", target)
		}
		return overwrite(target, data)
	}
	renamed = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// overwrite writes data over target in place and fsyncs it.
func overwrite(target string, data []byte) error {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	return writeSyncClose(f, data)
}

// writeSyncClose writes data to f, fsyncs and closes it; the first error wins.
func writeSyncClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
