package workspace

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// tmpHandle is an O_PATH handle on a workspace directory (Dir) and the
// identity of the temp directory below it (.mcp/tmp) when prepared.
type tmpHandle struct {
	dir      *os.File
	dev, ino uint64
}

// openTmpHandle opens dir (not followed if a symbolic link) and records
// the identity of dir/rel; nil when either fails.
func openTmpHandle(dir, rel string) *tmpHandle {
	f, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	h := &tmpHandle{dir: f}
	st, ok := h.stat(rel)
	if !ok {
		_ = f.Close()
		return nil
	}
	h.dev, h.ino = st.Dev, st.Ino
	return h
}

// stat is an fstatat of rel below the handle's directory, not following a
// final symbolic link; a closed handle fails (the file's reference keeps
// its descriptor from being reused meanwhile).
func (h *tmpHandle) stat(rel string) (unix.Stat_t, bool) {
	var st unix.Stat_t
	raw, err := h.dir.SyscallConn()
	if err != nil {
		return st, false
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.Fstatat(int(fd), rel, &st, unix.AT_SYMLINK_NOFOLLOW)
	}); err != nil || serr != nil {
		return st, false
	}
	return st, true
}

// intact reports whether rel below the handle's directory is still the
// directory prepared (same device and inode, so neither removed, renamed
// nor replaced), a real directory of mode 0700.
func (h *tmpHandle) intact(rel string) bool {
	st, ok := h.stat(rel)
	return ok && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&0o7777 == 0o700 &&
		st.Dev == h.dev && st.Ino == h.ino
}

func (h *tmpHandle) close() { _ = h.dir.Close() }

// wsTmpRel is the temp directory's path below Dir.
var wsTmpRel = filepath.Join(wsReservedDir, "tmp")
