package config

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A crash between the temp file's write and the rename leaves the old file
// as it was. The crash is real: a child test process exits in the hook.
func TestWriteCrashBeforeRenameLeavesTheOldFile(t *testing.T) {
	if dir := os.Getenv("MCPFLOW_CRASH_DIR"); dir != "" {
		beforeRename = func(string) { os.Exit(3) }
		_ = WriteFileAtomic(filepath.Join(dir, "extensions_config.json"), []byte(`{"new": true}`), nil)
		os.Exit(0) // not reached
	}
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "extensions_config.json")
	old := []byte("{\n  \"mcpServers\": {}\n}\n")
	require.NoError(t, os.WriteFile(path, old, 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteCrashBeforeRenameLeavesTheOldFile$")
	cmd.Env = append(os.Environ(), "MCPFLOW_CRASH_DIR="+dir)
	err := cmd.Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the child crashed: %v", err)
	require.Equal(t, 3, ee.ExitCode())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, old, got)
}

func TestWriteKeepsASymlinkAndMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "ext.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(real), 0o755))
	require.NoError(t, os.WriteFile(real, []byte("{}"), 0o640))
	link := filepath.Join(dir, "extensions_config.json")
	require.NoError(t, os.Symlink(real, link))
	require.NoError(t, WriteFileAtomic(link, []byte(`{"a": 1}`), nil))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	require.True(t, fi.Mode()&os.ModeSymlink != 0, "the config stays a symlink")
	got, err := os.ReadFile(real)
	require.NoError(t, err)
	require.Equal(t, `{"a": 1}`, string(got))
	fi, err = os.Stat(real)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	leftovers, _ := filepath.Glob(filepath.Join(dir, "real", ".ext.json.*.tmp"))
	require.Empty(t, leftovers, "no temp file is left")
}

func TestWriteFailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ext.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	rename = func(string, string) error { return syscall.EIO }
	t.Cleanup(func() { rename = os.Rename })
	require.ErrorIs(t, WriteFileAtomic(path, []byte("new"), nil), syscall.EIO)
	got, _ := os.ReadFile(path)
	require.Equal(t, "old", string(got))
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".ext.json.*.tmp"))
	require.Empty(t, leftovers)
}

// A bind-mounted file cannot be renamed over (EBUSY): it is overwritten in
// place, with one warning.
func TestWriteBusyFallsBackToOverwrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ext.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	rename = func(string, string) error { return &os.LinkError{Op: "rename", Err: syscall.EBUSY} }
	t.Cleanup(func() { rename = os.Rename })
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	require.NoError(t, WriteFileAtomic(path, []byte("new"), log))
	require.NoError(t, WriteFileAtomic(path, []byte("newer"), log))
	got, _ := os.ReadFile(path)
	require.Equal(t, "newer", string(got))
	require.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("overwriting it in place")), "warned once")
}

// The sidecar lock serializes writers across processes: a second process
// holding it makes this one wait until it lets go.
func TestWithLockAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("MCPFLOW_LOCK_DIR"); dir != "" {
		_ = WithLock(filepath.Join(dir, "extensions_config.json"), func() error {
			_ = os.WriteFile(filepath.Join(dir, "held"), nil, 0o600)
			time.Sleep(300 * time.Millisecond)
			return os.WriteFile(filepath.Join(dir, "released"), nil, 0o600)
		})
		os.Exit(0)
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWithLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "MCPFLOW_LOCK_DIR="+dir)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "held"))
		return err == nil
	}, 30*time.Second, 5*time.Millisecond)
	var releasedFirst bool
	require.NoError(t, WithLock(filepath.Join(dir, "extensions_config.json"), func() error {
		_, err := os.Stat(filepath.Join(dir, "released"))
		releasedFirst = err == nil
		return nil
	}))
	require.True(t, releasedFirst, "the lock was held by the other process until it released it")
	_, err := os.Stat(filepath.Join(dir, ".extensions_config.json.lock"))
	require.NoError(t, err, "the sidecar lock file sits beside the config")
}
