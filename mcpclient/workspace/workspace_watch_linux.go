//go:build linux

package workspace

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// wsWatch keeps a workspace's file snapshot current: inotify watches every
// directory (outside .mcp) and the tree is walked again only after an
// event. The kernel queues events inside the write itself, so draining
// after the answer sees every change made before it; an overflow or a
// failed watch means a walk every time. (Writes through shared mappings
// raise no event.)
type wsWatch struct {
	dir string

	mu     sync.Mutex
	fd     int          // -1 once closed or broken
	snap   FileSnapshot // valid while !dirty
	newest int64        // the newest mtime in snap
	dirty  bool
	broken bool // watching failed: walk every time
}

// wsWatchMask is what changes a snapshot: entries created, removed, moved
// or written, and metadata (a touched mtime).
const wsWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

func newWSWatch(dir string) *wsWatch {
	w := &wsWatch{dir: dir, fd: -1, dirty: true}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		w.broken = true
		return w
	}
	w.fd = fd
	return w
}

// snapshot returns the directory's files, walking only when something
// changed since the last walk.
func (w *wsWatch) snapshot() FileSnapshot {
	s, _ := w.snapshotNewest()
	return s
}

// snapshotNewest is snapshot with the newest mtime among its files
// (newestOf), kept from the walk.
func (w *wsWatch) snapshotNewest() (FileSnapshot, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		s := walkFiles(w.dir, nil)
		return s, newestOf(s)
	}
	if w.drain() {
		w.dirty = true
	}
	if !w.dirty {
		return w.snap, w.newest
	}
	// Watches go on before the walk reads each directory, so a change
	// made during the walk marks the snapshot dirty for the next call.
	w.dirty = false
	w.snap = walkFiles(w.dir, func(path string) {
		if w.broken {
			return
		}
		if _, err := unix.InotifyAddWatch(w.fd, path, wsWatchMask); err != nil {
			w.broken = true // e.g. ENOSPC: out of watches
		}
	})
	w.newest = newestOf(w.snap)
	if w.broken {
		// Walked all the same: this call's answer is the walk's (closing
		// drops the kept snapshot; the next calls walk every time).
		snap, newest := w.snap, w.newest
		w.closeLocked()
		return snap, newest
	}
	return w.snap, w.newest
}

// drain reads every queued event and reports whether there was one.
func (w *wsWatch) drain() bool {
	var buf [4096]byte
	any := false
	for {
		n, err := unix.Read(w.fd, buf[:])
		if n > 0 {
			any = true
			continue
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			w.broken = true
			w.closeLocked()
			return true
		}
		return any
	}
}

func (w *wsWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeLocked()
}

func (w *wsWatch) closeLocked() {
	if w.fd >= 0 {
		_ = unix.Close(w.fd)
		w.fd = -1
	}
	w.broken = true
	w.snap = nil
}
