package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkChangedSinceLargeWorkspace: what a stdio call that wrote
// nothing pays to learn so (route.NeedsTranslation asks ChangedSince
// for every answer without a path hint) in a workspace of 10,000 files.
func BenchmarkChangedSinceLargeWorkspace(b *testing.B) {
	ws := largeWorkspace(b)
	old := time.Now().Add(-time.Hour)
	_ = filepath.WalkDir(ws.Dir, func(p string, _ os.DirEntry, _ error) error { return os.Chtimes(p, old, old) })
	ws.ChangedSince(time.Now()) // the first walk
	for b.Loop() {
		if got := ws.ChangedSince(time.Now()); len(got) != 0 {
			b.Fatalf("changed: %d files", len(got))
		}
	}
}

// BenchmarkChangedSinceWriteInLargeWorkspace: a call that wrote one file
// in a workspace of 10,000 files.
func BenchmarkChangedSinceWriteInLargeWorkspace(b *testing.B) {
	ws := largeWorkspace(b)
	ws.ChangedSince(time.Now()) // the first walk
	out := filepath.Join(ws.Dir, "d07", "out.txt")
	for b.Loop() {
		start := time.Now()
		if err := os.WriteFile(out, []byte("y"), 0o644); err != nil {
			b.Fatal(err)
		}
		if got := ws.ChangedSince(start); len(got) != 1 || got[0] != out {
			b.Fatalf("changed: %v", got)
		}
	}
}

// largeWorkspace is a prepared workspace of 10,000 files in 100
// directories.
func largeWorkspace(b *testing.B) *Workspace {
	ws, err := Prepare(b.TempDir(), "alice", "t1")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10_000 {
		d := filepath.Join(ws.Dir, fmt.Sprintf("d%02d", i%100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.txt", i)), []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return ws
}
