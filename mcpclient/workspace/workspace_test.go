package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	mcpflow "github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/mcpclient/workspace"
)

// wsPrepare returns a fresh workspace for alice's thread t1 under a temp root.
func wsPrepare(t *testing.T) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Prepare(t.TempDir(), "alice", "t1")
	require.NoError(t, err)
	return ws
}

// wsWrite creates a file (and its parents) with the given content.
func wsWrite(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestPrepareWorkspaceLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws, err := workspace.Prepare(root, "alice@example.com", "thread-1")
	require.NoError(t, err)

	realRoot, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	require.Equal(t, root, ws.Root)
	require.Equal(t, filepath.Join(realRoot, "users", "alice@example.com", "threads", "thread-1", "user-data"), ws.UserData)
	require.Equal(t, filepath.Join(ws.UserData, "workspace"), ws.Dir)
	require.Equal(t, filepath.Join(ws.Dir, ".mcp", "tmp"), ws.TempDir)
	for _, d := range []string{"workspace", "uploads", "outputs"} {
		fi, err := os.Stat(filepath.Join(ws.UserData, d))
		require.NoError(t, err)
		require.True(t, fi.IsDir(), d)
	}
	fi, err := os.Stat(ws.TempDir)
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	require.Equal(t, map[string]string{"TMPDIR": ws.TempDir, "TMP": ws.TempDir, "TEMP": ws.TempDir}, ws.Env())
}

func TestPrepareWorkspaceRelativeRoot(t *testing.T) {
	t.Parallel()
	ws, err := workspace.Prepare(filepath.Join(t.TempDir(), "a", "..", "ws"), "u", "t")
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(ws.Root))
	require.True(t, filepath.IsAbs(ws.UserData))
	_, err = workspace.Prepare("", "u", "t")
	require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err))
}

func TestPrepareWorkspaceRepairsTempDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		spoil func(t *testing.T, ws *workspace.Workspace, outside string)
	}{
		{name: "loose mode", spoil: func(t *testing.T, ws *workspace.Workspace, _ string) {
			require.NoError(t, os.Chmod(ws.TempDir, 0o777))
		}},
		{name: "deleted", spoil: func(t *testing.T, ws *workspace.Workspace, _ string) {
			require.NoError(t, os.RemoveAll(filepath.Join(ws.Dir, ".mcp")))
		}},
		{name: "replaced by a symlink", spoil: func(t *testing.T, ws *workspace.Workspace, outside string) {
			require.NoError(t, os.Remove(ws.TempDir))
			require.NoError(t, os.Symlink(outside, ws.TempDir))
		}},
		{name: "deleted while open", spoil: func(t *testing.T, ws *workspace.Workspace, _ string) {
			// A process working in it keeps the directory open; its removal
			// is seen at once all the same.
			f, err := os.Open(ws.TempDir)
			require.NoError(t, err)
			t.Cleanup(func() { _ = f.Close() })
			require.NoError(t, os.RemoveAll(ws.Dir))
		}},
		{name: "replaced by another directory", spoil: func(t *testing.T, ws *workspace.Workspace, _ string) {
			require.NoError(t, os.Remove(ws.TempDir))
			require.NoError(t, os.Mkdir(ws.TempDir, 0o755))
		}},
		{name: ".mcp replaced by a file", spoil: func(t *testing.T, ws *workspace.Workspace, _ string) {
			require.NoError(t, os.RemoveAll(filepath.Join(ws.Dir, ".mcp")))
			wsWrite(t, filepath.Join(ws.Dir, ".mcp"), "x")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			outside := t.TempDir()
			require.NoError(t, os.Chmod(outside, 0o755))
			ws, err := workspace.Prepare(root, "u", "t")
			require.NoError(t, err)
			tt.spoil(t, ws, outside)

			again, err := workspace.Prepare(root, "u", "t")
			require.NoError(t, err)
			require.Equal(t, ws, again)
			fi, err := os.Lstat(again.TempDir)
			require.NoError(t, err)
			require.True(t, fi.IsDir())
			require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
			fi, err = os.Stat(outside)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "a symlink target must not be touched")
		})
	}
}

func TestPrepareWorkspaceRejectsIDs(t *testing.T) {
	t.Parallel()
	bad := []struct{ name, id string }{
		{"empty", ""},
		{"dot dot", ".."},
		{"dot", "."},
		{"hidden", ".x"},
		{"slash", "a/b"},
		{"backslash", `a\b`},
		{"nul", "a\x00b"},
		{"absolute", "/etc"},
		{"65 chars", strings.Repeat("a", 65)},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, ids := range [][2]string{{tt.id, "t1"}, {"alice", tt.id}} {
				root := t.TempDir()
				ws, err := workspace.Prepare(root, ids[0], ids[1])
				require.Nil(t, ws)
				require.Error(t, err)
				require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err))
				entries, err := os.ReadDir(root)
				require.NoError(t, err)
				require.Empty(t, entries, "nothing is created for an invalid id")
			}
		})
	}
	ws, err := workspace.Prepare(t.TempDir(), strings.Repeat("a", 64), "_t.1@x-y")
	require.NoError(t, err)
	require.NotNil(t, ws)
}

func TestPrepareWorkspaceConcurrent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const n = 32
	results := make([]*workspace.Workspace, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			thread := fmt.Sprintf("t%d", i%4)
			results[i], errs[i] = workspace.Prepare(root, "alice", thread)
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, results[i%4], results[i])
		fi, err := os.Stat(results[i].TempDir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	}
}

func TestPrepareWorkspaceSymlinkedRoot(t *testing.T) {
	t.Parallel()
	realDir := t.TempDir()
	link := filepath.Join(t.TempDir(), "root")
	require.NoError(t, os.Symlink(realDir, link))
	ws, err := workspace.Prepare(link, "u", "t")
	require.NoError(t, err)
	realRoot, err := filepath.EvalSymlinks(realDir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(realRoot, "users", "u", "threads", "t", "user-data"), ws.UserData)

	// A path spelled through the symlinked root still resolves inside.
	wsWrite(t, filepath.Join(ws.Dir, "a.txt"), "a")
	in := filepath.Join(link, "users", "u", "threads", "t", "user-data", "workspace", "a.txt")
	require.Equal(t, "/mnt/user-data/workspace/a.txt", ws.TranslateText(in, "", nil))
}

func TestWorkspaceSnapshotChanged(t *testing.T) {
	t.Parallel()
	ws := wsPrepare(t)
	kept := filepath.Join(ws.Dir, "kept.txt")
	grown := filepath.Join(ws.Dir, "sub", "grown.txt")
	touched := filepath.Join(ws.Dir, "touched.txt")
	wsWrite(t, kept, "k")
	wsWrite(t, grown, "g")
	wsWrite(t, touched, "t")
	wsWrite(t, filepath.Join(ws.Dir, ".mcp", "state.json"), "{}")
	wsWrite(t, filepath.Join(ws.Dir, "sub", ".mcp", "x"), "x")
	require.NoError(t, os.Symlink(kept, filepath.Join(ws.Dir, "link.txt")))

	before := ws.Snapshot()
	require.Len(t, before, 3)
	require.Contains(t, before, kept)
	require.Contains(t, before, grown)
	require.Contains(t, before, touched)
	past := time.Now().Add(-time.Hour)
	for _, f := range []string{kept, grown, touched} {
		require.NoError(t, os.Chtimes(f, past, past))
	}
	start := time.Now()

	created := filepath.Join(ws.Dir, "new", "page.yml")
	wsWrite(t, created, "p")
	wsWrite(t, grown, "grown")
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(touched, future, future))
	wsWrite(t, filepath.Join(ws.TempDir, "scratch"), "s")
	wsWrite(t, filepath.Join(ws.Dir, "deep", "er", ".mcp", "y"), "y")
	wsWrite(t, filepath.Join(ws.UserData, "outputs", "o.txt"), "o")
	require.NoError(t, os.Symlink(grown, filepath.Join(ws.Dir, "link2.txt")))

	require.Equal(t, []string{created, grown, touched}, ws.ChangedSince(start))
	require.Empty(t, ws.ChangedSince(time.Now().Add(2*time.Hour)))
	require.Len(t, ws.ChangedSince(time.Time{}), 4)
}

// Foreign tells another user's or thread's files under the workspace root
// from the thread's own and from paths outside the root, however spelled.
func TestWorkspaceForeign(t *testing.T) {
	root := t.TempDir()
	alice, err := workspace.Prepare(root, "alice", "t1")
	require.NoError(t, err)
	bob, err := workspace.Prepare(root, "bob", "t1")
	require.NoError(t, err)
	other, err := workspace.Prepare(root, "alice", "t2")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bob.Dir, "secret.txt"), []byte("x"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(bob.Dir, "secret.txt"), filepath.Join(alice.Dir, "link.txt")))
	for uri, foreign := range map[string]bool{
		"file://" + filepath.Join(alice.Dir, "notes.md"):                        false,
		"file://" + alice.Dir:                                                   false,
		"file:///mnt/user-data/workspace/notes.md":                              false,
		"file:///etc/hosts":                                                     false,
		"demo://resource/1":                                                     false,
		"file://" + filepath.Join(bob.Dir, "secret.txt"):                        true,
		"file://" + filepath.Join(other.Dir, "notes.md"):                        true,
		"file://" + alice.Dir + "/../../../../../bob/threads/t1/user-data/x":    true,
		"file://" + strings.ReplaceAll(filepath.Join(bob.Dir, "s"), "/", "%2F"): true, // escaped slashes: unparsable here, not sent on
		"FILE://" + filepath.Join(bob.Dir, "secret.txt"):                        true,
		"file://" + filepath.Join(alice.Dir, "link.txt"):                        true, // a link to bob's file
		"file://" + root + "/users":                                             true,
		"file://" + filepath.Join(bob.Dir, "secret.txt") + "#%zz":               true, // unparsable here, read by others
		"file:../../bob/threads/t1/user-data/workspace/secret.txt":              true, // opaque
	} {
		require.Equal(t, foreign, alice.Foreign(uri), uri)
	}
}
