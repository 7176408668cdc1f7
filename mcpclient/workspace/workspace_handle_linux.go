package workspace

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openDirHandle opens the directory at path as an O_PATH handle (no read
// access, not followed if a symbolic link), or returns nil.
func openDirHandle(path string) *os.File {
	f, err := os.OpenFile(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	return f
}

// handleIntact reports whether f is a 0700 directory still linked in the
// file system.
func handleIntact(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 0
}
