//go:build linux

package workspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// wsWatch keeps a workspace's file snapshot current: inotify watches every
// directory (outside .mcp). An event about a file updates that file's
// entry from an lstat (a file with other hard links, whose other names
// changed too, has the tree walked again); one about a directory
// (created, removed, moved, its attributes, the directory itself) or an
// overflow has the tree walked again, and so does every call while the
// workspace directory is missing. The kernel queues events inside the
// write itself, so draining after the answer sees every change made
// before it; a watch that cannot be added for want of watches means a
// walk every time (a directory gone or unreadable needs none). (Writes through
// shared mappings, and to a hard link from outside the tree, raise no
// event; a directory above the workspace renamed raises none either:
// verify, at each full preparation of the workspace, finds it.)
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

	rootDev, rootIno uint64 // the workspace directory's identity at the last walk
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
	rootWatched := false
	w.snap = walkFiles(w.dir, func(path string) {
		if !w.broken && w.watchLocked(path) {
			rootWatched = rootWatched || path == w.dir
		}
	})
	// No watch on the workspace directory (missing, not a directory):
	// nothing would say when it is back, so the next call walks too.
	w.rootDev, w.rootIno = 0, 0
	var st unix.Stat_t
	if !rootWatched || unix.Stat(w.dir, &st) != nil {
		w.dirty = true
	} else {
		w.rootDev, w.rootIno = st.Dev, st.Ino
	}
	for wd := range old {
		if _, ok := w.wds[wd]; !ok && !w.broken {
			_, _ = unix.InotifyRmWatch(w.fd, uint32(wd)) // moved out or gone
		}
	}
	w.newest = newestOf(w.snap)
}

// watchLocked adds a watch on directory path and reports whether it did.
// A directory only, never through a symbolic link: one swapped in since
// the walk listed the directory would have the watch follow it out of the
// tree. One removed or replaced since (its parent's watch has the event),
// or unreadable (the walk cannot list it either; a chmod is an event on
// its parent), needs no watch: nothing of it is in the snapshot. Any other
// failure (out of watches: ENOSPC) breaks the watcher.
func (w *wsWatch) watchLocked(path string) bool {
	wd, err := unix.InotifyAddWatch(w.fd, path, wsWatchMask|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EACCES):
		return false
	case err != nil:
		w.broken = true
		return false
	}
	w.wds[int32(wd)] = path
	return true
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
				if !w.update(path) {
					return true
				}
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
			// A watched directory itself: removed, moved or its
			// attributes changed (the workspace's own have no other event).
			rewalk = true
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
// or no entry. It reports false for a file with other hard links, whose
// other names in the tree changed too (the tree must be walked).
func (w *wsWatch) update(path string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		delete(w.snap, path)
		return true
	}
	if st.Nlink > 1 {
		return false
	}
	fs := wsFileStat{mtimeNS: st.Mtim.Nano(), size: st.Size}
	w.snap[path] = fs
	w.newest = max(w.newest, fs.mtimeNS)
	return true
}

// verify has the next call walk the tree when the workspace directory is
// no longer the one the last walk watched (a directory above it renamed,
// it replaced): no event says so. Prepare calls it at each full
// preparation, so that is found within wsRecheckEvery.
func (w *wsWatch) verify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st unix.Stat_t
	if !w.broken && !w.dirty && (unix.Stat(w.dir, &st) != nil || st.Dev != w.rootDev || st.Ino != w.rootIno) {
		w.dirty = true
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
	w.wds = nil
}

// newestOf is the newest mtime among s's files (math.MinInt64 for none).
func newestOf(s FileSnapshot) int64 {
	newest := int64(math.MinInt64)
	for _, st := range s {
		newest = max(newest, st.mtimeNS)
	}
	return newest
}
