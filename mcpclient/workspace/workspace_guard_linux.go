//go:build linux

package workspace

import (
	"errors"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// tmpGuard is the process's one inotify instance on the private temp
// directories of prepared workspaces and every directory above each of
// them, so that a known thread's call learns with one read of its queue,
// rather than an lstat that walks the whole path, that none of them was
// removed, moved or (the temp directory) changed mode. Any event advances
// the generation, and a workspace prepared in an earlier one is checked
// by its path again (wsCache.get). The kernel queues an event within the
// change itself, so a read after the change sees it.
var tmpGuard = newGuard()

type guard struct {
	mu  sync.Mutex
	fd  int    // -1 once inotify is missing or failed: every check is an lstat
	gen uint64 // events read so far
}

func newGuard() *guard {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1
	}
	return &guard{fd: fd}
}

// guardMask is what makes a path check stale: a watched directory itself
// removed or moved (its parent's other entries change nothing).
const guardMask = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR | unix.IN_MASK_ADD

// arm watches tempDir (its mode too) and each directory above it, as the
// path resolves now; false when a watch could not be added (out of
// watches, say): the workspace is then checked by its path on every call.
func (g *guard) arm(tempDir string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fd < 0 {
		return false
	}
	mask := uint32(guardMask | unix.IN_ATTRIB)
	for dir := tempDir; ; dir = filepath.Dir(dir) {
		if _, err := unix.InotifyAddWatch(g.fd, dir, mask); err != nil {
			return false
		}
		if filepath.Dir(dir) == dir {
			return true
		}
		mask = guardMask
	}
}

// generation reads the queued events and returns how many there have
// been; false when the guard does not work.
func (g *guard) generation() (uint64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var buf [4096]byte
	for g.fd >= 0 {
		n, err := unix.Read(g.fd, buf[:])
		switch {
		case n > 0:
			g.gen++ // an overflow of the queue is an event too
		case errors.Is(err, unix.EINTR):
		case err == nil || errors.Is(err, unix.EAGAIN):
			return g.gen, true
		default:
			_ = unix.Close(g.fd)
			g.fd = -1
		}
	}
	return 0, false
}
