//go:build linux

package workspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// wsWatch keeps a workspace's file snapshot current: inotify watches every
// directory (outside .mcp). An event about a file updates that file's
// entry from an lstat; one about a directory (created, removed, moved,
// its attributes), about the workspace directory itself, or an overflow
// has the tree walked again. The kernel queues events inside the write
// itself, so draining after the answer sees every change made before it;
// a failed watch means a walk every time. (Writes through shared mappings
// raise no event.)
type wsWatch struct {
	dir string

	mu     sync.Mutex
	fd     int              // -1 once closed or broken
	wds    map[int32]string // watch descriptor → its directory, from the last walk
	snap   FileSnapshot     // valid while !dirty
	newest int64            // no file of snap is newer (an upper bound)
	dirty  bool
	broken bool // watching failed: walk every time
	walks  int  // full walks, for tests
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

// snapshot returns a copy of the directory's files, for tests.
func (w *wsWatch) snapshot() FileSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.currentLocked())
}

// changed returns the files with an mtime at or after cut, sorted: none
// without a look at each file when even the newest is older (the common
// call, which wrote nothing).
func (w *wsWatch) changed(cut int64) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	snap := w.currentLocked()
	if w.newest < cut {
		return nil
	}
	return changedIn(snap, cut)
}

// currentLocked brings the snapshot up to date and returns it (w.newest
// bounds it): the queued events applied, or the tree walked again.
func (w *wsWatch) currentLocked() FileSnapshot {
	if w.broken {
		s := walkFiles(w.dir, nil)
		w.newest = newestOf(s)
		return s
	}
	if w.drain() {
		w.dirty = true
	}
	if !w.dirty {
		return w.snap
	}
	w.walkLocked()
	if w.broken {
		// Walked all the same: this call's answer is the walk's (closing
		// drops the kept snapshot; the next calls walk every time).
		snap := w.snap
		w.closeLocked()
		return snap
	}
	return w.snap
}

// walkLocked walks the tree, watching each directory before its entries
// are read (a change made during the walk then marks the snapshot dirty
// for the next call), and drops the watches of directories no longer in
// it.
func (w *wsWatch) walkLocked() {
	w.walks++
	w.dirty = false
	old := w.wds
	w.wds = map[int32]string{}
	w.snap = walkFiles(w.dir, func(path string) {
		if w.broken {
			return
		}
		wd, err := unix.InotifyAddWatch(w.fd, path, wsWatchMask)
		if err != nil {
			w.broken = true // e.g. ENOSPC: out of watches
			return
		}
		w.wds[int32(wd)] = path
	})
	for wd := range old {
		if _, ok := w.wds[wd]; !ok && !w.broken {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd)) // moved out or gone
		}
	}
	w.newest = newestOf(w.snap)
}

// drain reads every queued event and applies those about files to the
// snapshot (each file once); it reports whether one calls for a walk (or
// the descriptor failed).
func (w *wsWatch) drain() bool {
	var buf [4096]byte
	rewalk := false
	var files map[string]struct{}
	for {
		n, err := unix.Read(w.fd, buf[:])
		if n > 0 {
			if w.events(buf[:n], func(path string) {
				if files == nil {
					files = map[string]struct{}{}
				}
				files[path] = struct{}{}
			}) {
				rewalk = true
			}
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
		if !rewalk && !w.dirty {
			for path := range files {
				w.update(path)
			}
		}
		return rewalk
	}
}

// events reads a read's inotify_event records, calls file with the path
// of each file an event is about, and reports whether one calls for a
// walk: an overflow, a directory created, removed, moved or changed
// (other than a .mcp, which walks skip), the workspace directory itself
// removed or moved, or bytes that are not whole records.
func (w *wsWatch) events(b []byte, file func(path string)) bool {
	rewalk := false
	for len(b) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(b[0:4]))
		mask := binary.NativeEndian.Uint32(b[4:8])
		end := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:16]))
		if end > len(b) {
			return true
		}
		name := b[unix.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[end:]
		switch dir, known := w.wds[wd]; {
		case mask&unix.IN_Q_OVERFLOW != 0:
			rewalk = true
		case mask&unix.IN_IGNORED != 0:
			delete(w.wds, wd) // its directory is gone: its parent said so
		case !known:
			// A directory moved out of the tree since the last walk.
		case len(name) == 0:
			// The directory itself: removed or moved (the workspace, or
			// one whose parent's event is on its way), or its attributes.
			if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				rewalk = true
			}
		case mask&unix.IN_ISDIR != 0:
			if string(name) != wsReservedDir {
				rewalk = true
			}
		default:
			file(filepath.Join(dir, string(name)))
		}
	}
	return rewalk || len(b) > 0
}

// update sets path's entry from an lstat: a regular file's mtime and size,
// or no entry.
func (w *wsWatch) update(path string) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		delete(w.snap, path)
		return
	}
	st := wsFileStat{mtimeNS: fi.ModTime().UnixNano(), size: fi.Size()}
	w.snap[path] = st
	w.newest = max(w.newest, st.mtimeNS)
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
	w.wds = nil
}
