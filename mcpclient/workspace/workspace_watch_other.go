//go:build !linux

package workspace

// wsWatch walks the directory every time where inotify is missing.
type wsWatch struct{ dir string }

func newWSWatch(dir string) *wsWatch          { return &wsWatch{dir: dir} }
func (w *wsWatch) snapshot() FileSnapshot     { return walkFiles(w.dir, nil) }
func (w *wsWatch) changed(cut int64) []string { return changedIn(walkFiles(w.dir, nil), cut) }
func (w *wsWatch) verify()                    {}
func (w *wsWatch) close()                     {}
