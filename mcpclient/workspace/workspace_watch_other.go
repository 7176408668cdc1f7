//go:build !linux

package workspace

// wsWatch walks the directory every time where inotify is missing.
type wsWatch struct{ dir string }

func newWSWatch(dir string) *wsWatch      { return &wsWatch{dir: dir} }
func (w *wsWatch) snapshot() FileSnapshot { return walkFiles(w.dir, nil) }
func (w *wsWatch) close()                 {}

// guard is missing where inotify is: every check of a prepared workspace
// is an lstat of its temp directory.
type guard struct{}

var tmpGuard guard

func (guard) arm(string) bool            { return false }
func (guard) generation() (uint64, bool) { return 0, false }
