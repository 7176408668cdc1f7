//go:build linux

package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The guard's generation moves when the temp directory changes mode or
// goes, or a directory above it is moved, and not for what happens inside
// or beside them.
func TestGuardSeesChangesAbove(t *testing.T) {
	root := t.TempDir()
	ws, err := prepareWorkspace(root, "u", "t")
	require.NoError(t, err)
	g := newGuard()
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	require.True(t, g.arm(ws.TempDir))
	gen, ok := g.generation()
	require.True(t, ok)
	unchanged := func(what string) {
		t.Helper()
		now, ok := g.generation()
		require.True(t, ok)
		require.Equal(t, gen, now, "%s moved the generation", what)
	}
	moved := func(what string) {
		t.Helper()
		now, ok := g.generation()
		require.True(t, ok)
		require.NotEqual(t, gen, now, "%s did not move the generation", what)
		gen = now
	}

	unchanged("nothing")
	require.NoError(t, os.WriteFile(filepath.Join(ws.TempDir, "f"), []byte("x"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(ws.TempDir, "d"), 0o700))
	require.NoError(t, os.Remove(filepath.Join(ws.TempDir, "d")))
	require.NoError(t, os.Mkdir(filepath.Join(ws.Dir, "out"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws.Dir, "out", "r.md"), []byte("x"), 0o644))
	unchanged("files and directories inside and beside")

	require.NoError(t, os.Chmod(ws.TempDir, 0o777))
	moved("a chmod of the temp directory")
	require.NoError(t, os.Chmod(ws.TempDir, 0o700))
	moved("a chmod back")

	thread := filepath.Dir(ws.UserData)
	require.NoError(t, os.Rename(thread, thread+".old"))
	moved("the thread's directory moved away")

	again, err := prepareWorkspace(root, "u", "t")
	require.NoError(t, err)
	require.True(t, g.arm(again.TempDir))
	gen, _ = g.generation()
	require.NoError(t, os.RemoveAll(filepath.Join(again.Dir, ".mcp")))
	moved("the temp directory removed")
}

// Prepare keeps a workspace watched by tmpGuard, and a change above it
// found that way is repaired on the next call.
func TestPrepareWatchesWorkspace(t *testing.T) {
	root := t.TempDir()
	ws, err := Prepare(root, "u", "t")
	require.NoError(t, err)
	key := root + "\x00u\x00t"
	w, unchanged := wsPrepared.get(key)
	require.Same(t, ws, w)
	require.True(t, unchanged, "a prepared workspace is watched")

	thread := filepath.Dir(ws.UserData)
	require.NoError(t, os.Rename(thread, thread+".old"))
	_, unchanged = wsPrepared.get(key)
	require.False(t, unchanged)
	again, err := Prepare(root, "u", "t")
	require.NoError(t, err)
	fi, err := os.Lstat(again.TempDir)
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}
