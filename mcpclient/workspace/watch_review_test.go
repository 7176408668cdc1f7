//go:build linux

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func reviewWrite(t *testing.T, p, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
}

func reviewAppend(t *testing.T, p, body string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(body)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// Regression (a0af66a). A file with two names in the tree (a hard link):
// a write through one name raises events for that name only, but both
// names' mtime and size change. The walk sees both; the watcher updates
// one, and changed() misses the other.
func TestReviewWatchHardLink(t *testing.T) {
	dir := t.TempDir()
	reviewWrite(t, filepath.Join(dir, "a.txt"), "1")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "sub", "b.txt")))
	w := newWSWatch(dir)
	defer w.close()
	require.Equal(t, walkFiles(dir, nil), w.snapshot())

	reviewAppend(t, filepath.Join(dir, "a.txt"), "more") // size 1 -> 5 for both names
	require.Equal(t, walkFiles(dir, nil), w.snapshot(), "the other name of the file keeps its old size and mtime")
}

// The workspace directory gone and back (renamed away and back: a
// regression of a0af66a; removed and made again, as Prepare's MkdirAll
// does: older): the walk of a missing directory adds no watch, and the
// watcher must not then stop looking.
func TestReviewWatchRootGoneAndBack(t *testing.T) {
	for name, gone := range map[string]func(dir string) error{
		"renamed away and back":  func(dir string) error { return os.Rename(dir, dir+".away") },
		"removed and made again": os.RemoveAll,
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ws")
			reviewWrite(t, filepath.Join(dir, "a.txt"), "1")
			w := newWSWatch(dir)
			defer w.close()
			require.Equal(t, walkFiles(dir, nil), w.snapshot())

			require.NoError(t, gone(dir))
			require.Equal(t, walkFiles(dir, nil), w.snapshot()) // both empty
			if _, err := os.Stat(dir + ".away"); err == nil {
				require.NoError(t, os.Rename(dir+".away", dir))
			}
			reviewWrite(t, filepath.Join(dir, "b.txt"), "2")
			require.Equal(t, walkFiles(dir, nil), w.snapshot(), "the watcher went blind")
		})
	}
}

// Pre-existing (no event at all, before a0af66a too). A directory above
// the workspace renamed: the workspace's path names nothing, but no watch
// reports the move; verify, which each full preparation of the workspace
// calls (at most wsRecheckEvery apart), finds it.
func TestReviewWatchAncestorRenamed(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "thread", "ws")
	reviewWrite(t, filepath.Join(dir, "a.txt"), "1")
	w := newWSWatch(dir)
	defer w.close()
	require.Equal(t, walkFiles(dir, nil), w.snapshot())

	require.NoError(t, os.Rename(filepath.Join(parent, "thread"), filepath.Join(parent, "thread2")))
	w.verify()
	require.Equal(t, walkFiles(dir, nil), w.snapshot(), "the workspace's path names nothing now")
	// Prepared again at the same path: a new directory, watched anew.
	reviewWrite(t, filepath.Join(dir, "b.txt"), "2")
	w.verify()
	require.Equal(t, walkFiles(dir, nil), w.snapshot())
	reviewWrite(t, filepath.Join(dir, "c.txt"), "3")
	require.Equal(t, walkFiles(dir, nil), w.snapshot())
}

// Regression (a0af66a): the workspace directory made unreadable raises
// IN_ATTRIB on the directory itself only, which no longer walks; the walk
// finds nothing in it. Run with CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH
// dropped on one locked thread when the tests run as root.
func TestReviewWatchRootUnreadable(t *testing.T) {
	dir := t.TempDir()
	reviewWrite(t, filepath.Join(dir, "a.txt"), "1")
	defer func() { _ = os.Chmod(dir, 0o755) }()

	var want, got FileSnapshot
	var err error
	withoutDACOverride(t, func() {
		w := newWSWatch(dir)
		defer w.close()
		if s := w.snapshot(); len(s) != 1 {
			err = fmt.Errorf("first snapshot: %v", s)
			return
		}
		if err = os.Chmod(dir, 0); err != nil {
			return
		}
		want = walkFiles(dir, nil)
		got = w.snapshot()
	})
	require.NoError(t, err)
	require.Empty(t, want, "the walk cannot read the directory")
	require.Equal(t, want, got)
}

// Cases that hold (coverage): a file replaced by a directory, by a
// symbolic link (to a directory too), .mcp files and directories swapped,
// NAME_MAX names, a directory moved out and another made in its place, a
// directory renamed with writes inside it before and after, rename
// exchange of a file with a directory, an overflowing queue.
func TestReviewWatchHolds(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	w := newWSWatch(dir)
	defer w.close()
	same := func(msg string) {
		t.Helper()
		want := walkFiles(dir, nil)
		require.Equal(t, want, w.snapshot(), msg)
		require.Equal(t, changedIn(want, 0), w.changed(0), msg)
	}
	p := func(rel string) string { return filepath.Join(dir, rel) }
	same("empty")

	reviewWrite(t, p("f"), "1")
	same("file")
	require.NoError(t, os.Remove(p("f")))
	require.NoError(t, os.Mkdir(p("f"), 0o755))
	reviewWrite(t, p("f/in"), "x")
	same("file replaced by a directory")
	require.NoError(t, os.RemoveAll(p("f")))
	reviewWrite(t, p("f"), "1")
	same("directory replaced by a file")
	require.NoError(t, os.Symlink(outside, p("f.tmp")))
	require.NoError(t, os.Rename(p("f.tmp"), p("f")))
	same("file replaced by a symbolic link to a directory")
	reviewWrite(t, filepath.Join(outside, "o"), "o")
	same("written through nothing watched")

	reviewWrite(t, p(".mcp"), "a file named .mcp is a file")
	same(".mcp file")
	require.NoError(t, os.Remove(p(".mcp")))
	reviewWrite(t, p(".mcp/x"), "hidden")
	same(".mcp directory")
	require.NoError(t, os.Rename(p(".mcp"), p("visible")))
	same(".mcp renamed to a name")
	require.NoError(t, os.Mkdir(p("sub"), 0o755))
	require.NoError(t, os.Rename(p("visible"), p("sub/.mcp")))
	same("renamed into .mcp")

	long := strings.Repeat("n", 255)
	for i := range 40 {
		reviewWrite(t, p(fmt.Sprintf("%s/%s%d", "sub", long[:250], i)), "x")
	}
	reviewWrite(t, p(long), "x")
	same("NAME_MAX names, many records a read")

	require.NoError(t, os.Mkdir(p("d"), 0o755))
	reviewWrite(t, p("d/x"), "1")
	same("d")
	require.NoError(t, os.Rename(p("d"), filepath.Join(outside, "d")))
	require.NoError(t, os.Mkdir(p("d"), 0o755))
	reviewWrite(t, p("d/y"), "1")
	reviewWrite(t, filepath.Join(outside, "d", "x"), "changed outside")
	reviewWrite(t, filepath.Join(outside, "d", "y"), "same name outside")
	same("moved out, another in its place")
	reviewWrite(t, filepath.Join(outside, "d", "z"), "after the walk")
	same("events of a directory moved out")
	require.NoError(t, os.Rename(filepath.Join(outside, "d"), p("back")))
	reviewWrite(t, p("back/z"), "back")
	same("moved back")

	reviewWrite(t, p("r/x"), "1")
	same("r")
	reviewAppend(t, p("r/x"), "2")
	require.NoError(t, os.Rename(p("r"), p("r2")))
	reviewAppend(t, p("r2/x"), "3")
	reviewWrite(t, p("r2/new"), "4")
	same("renamed with writes before and after")
	reviewAppend(t, p("r2/x"), "5")
	same("after the walk")

	reviewWrite(t, p("ex"), "file")
	require.NoError(t, os.Mkdir(p("exd"), 0o755))
	reviewWrite(t, p("exd/in"), "in")
	same("before exchange")
	require.NoError(t, unix.Renameat2(unix.AT_FDCWD, p("ex"), unix.AT_FDCWD, p("exd"), unix.RENAME_EXCHANGE))
	same("file and directory exchanged")

	walks := w.walks
	for i := range 20000 {
		require.NoError(t, os.WriteFile(p(fmt.Sprintf("sub/q%d", i)), nil, 0o644))
	}
	same("queue overflowed")
	require.Greater(t, w.walks, walks, "files' events alone walk only on an overflow")
	require.False(t, w.broken)
}

// changed() and snapshot() from several goroutines while files change
// (for -race); each answer is checked once the writers stop.
func TestReviewWatchConcurrent(t *testing.T) {
	dir := t.TempDir()
	w := newWSWatch(dir)
	defer w.close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p := filepath.Join(dir, fmt.Sprintf("g%d", g), fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%d", i))
				_ = os.MkdirAll(filepath.Dir(p), 0o755)
				_ = os.WriteFile(p, []byte("x"), 0o644)
				_ = w.changed(0)
				_ = w.snapshot()
			}
		}()
	}
	wg.Wait()
	want := walkFiles(dir, nil)
	require.Equal(t, want, w.snapshot())
	require.Equal(t, changedIn(want, 0), w.changed(0))
}
