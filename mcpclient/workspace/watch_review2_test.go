//go:build linux

package workspace

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// posixACL encodes a system.posix_acl_access value: owner rwx, user uid
// r-x, group and other nothing.
func posixACL(uid uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	entry := func(tag, perm uint16, id uint32) {
		b = binary.LittleEndian.AppendUint16(b, tag)
		b = binary.LittleEndian.AppendUint16(b, perm)
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	entry(0x01, 7, 0xffffffff) // ACL_USER_OBJ
	entry(0x02, 5, uid)        // ACL_USER
	entry(0x04, 0, 0xffffffff) // ACL_GROUP_OBJ
	entry(0x10, 5, 0xffffffff) // ACL_MASK
	entry(0x20, 0, 0xffffffff) // ACL_OTHER
	return b
}

// TestReview2WatchUnreadableCases (holds; regression for bee15ed's EACCES
// skip): directories the process may not read (CAP_DAC_OVERRIDE dropped)
// made readable in the ways that raise an event on a watched directory -
// their own chmod, deep in the tree; an unreadable one inside another,
// inner opened first; read without search and search without read; another
// owner's directory opened to this uid by a POSIX ACL (setxattr), the ACL
// removed and set again, then chowned - the snapshot equals a fresh walk
// after each step, and the watcher is never broken. seen checks that each
// case really changes what the walk can read.
func TestReview2WatchUnreadableCases(t *testing.T) {
	type step struct {
		name string
		do   func(dir string) error
	}
	cases := map[string]struct {
		setup func(t *testing.T, dir string)
		steps []step
		seen  []int // files the walk sees at the start and after each step
	}{
		"nested, made readable by its own chmod": {
			setup: func(t *testing.T, dir string) {
				reviewWrite(t, filepath.Join(dir, "a/b/locked/f"), "x")
				reviewWrite(t, filepath.Join(dir, "a/b/locked/sub/g"), "x")
				require.NoError(t, os.Chmod(filepath.Join(dir, "a/b/locked"), 0))
			},
			steps: []step{
				{"nothing", func(dir string) error { return nil }},
				{"chmod 755", func(dir string) error { return os.Chmod(filepath.Join(dir, "a/b/locked"), 0o755) }},
			},
			seen: []int{0, 0, 2},
		},
		"unreadable inside unreadable, inner opened first": {
			setup: func(t *testing.T, dir string) {
				reviewWrite(t, filepath.Join(dir, "o/i/f"), "x")
				require.NoError(t, os.Chmod(filepath.Join(dir, "o/i"), 0))
				require.NoError(t, os.Chmod(filepath.Join(dir, "o"), 0))
			},
			steps: []step{
				{"inner chmod", func(dir string) error { return os.Chmod(filepath.Join(dir, "o/i"), 0o755) }},
				{"outer chmod", func(dir string) error { return os.Chmod(filepath.Join(dir, "o"), 0o755) }},
			},
			seen: []int{0, 0, 1},
		},
		"readable, no search": {
			setup: func(t *testing.T, dir string) {
				reviewWrite(t, filepath.Join(dir, "r/f"), "x")
				reviewWrite(t, filepath.Join(dir, "r/s/g"), "x")
				require.NoError(t, os.Chmod(filepath.Join(dir, "r"), 0o644))
			},
			steps: []step{
				{"chmod 755", func(dir string) error { return os.Chmod(filepath.Join(dir, "r"), 0o755) }},
			},
			seen: []int{0, 2},
		},
		"search, no read": {
			setup: func(t *testing.T, dir string) {
				reviewWrite(t, filepath.Join(dir, "x/f"), "x")
				reviewWrite(t, filepath.Join(dir, "x/s/g"), "x")
				require.NoError(t, os.Chmod(filepath.Join(dir, "x"), 0o311))
			},
			steps: []step{
				{"chmod 755", func(dir string) error { return os.Chmod(filepath.Join(dir, "x"), 0o755) }},
			},
			seen: []int{0, 2},
		},
		"another owner's, made readable by an ACL": {
			setup: func(t *testing.T, dir string) {
				reviewWrite(t, filepath.Join(dir, "acl/f"), "x")
				reviewWrite(t, filepath.Join(dir, "acl/s/g"), "x")
				require.NoError(t, os.Chown(filepath.Join(dir, "acl"), 1000, 1000))
				require.NoError(t, os.Chmod(filepath.Join(dir, "acl"), 0o700))
			},
			steps: []step{
				{"setxattr ACL", func(dir string) error {
					return unix.Setxattr(filepath.Join(dir, "acl"), "system.posix_acl_access", posixACL(0), 0)
				}},
				{"ACL removed", func(dir string) error {
					return unix.Removexattr(filepath.Join(dir, "acl"), "system.posix_acl_access")
				}},
				{"ACL again", func(dir string) error {
					return unix.Setxattr(filepath.Join(dir, "acl"), "system.posix_acl_access", posixACL(0), 0)
				}},
				{"chown back", func(dir string) error { return os.Chown(filepath.Join(dir, "acl"), 0, 0) }},
			},
			seen: []int{0, 2, 0, 2, 2},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			t.Cleanup(func() {
				_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
					if d != nil && d.IsDir() {
						_ = os.Chmod(p, 0o755)
						_ = os.Chown(p, 0, 0)
					}
					return nil
				})
				for _, p := range []string{"a/b/locked", "o", "o/i", "r", "x", "acl"} {
					_ = os.Chmod(filepath.Join(dir, p), 0o755)
				}
			})
			var msgs []string
			var seen []int // files the walk sees at each check
			var broken bool
			withoutDACOverride(t, func() {
				w := newWSWatch(dir)
				defer w.close()
				check := func(what string) {
					want, got := walkFiles(dir, nil), w.snapshot()
					seen = append(seen, len(want))
					if fmt.Sprint(want) != fmt.Sprint(got) {
						msgs = append(msgs, fmt.Sprintf("%s: walk %v, watcher %v", what, want, got))
					}
				}
				check("start")
				for _, s := range c.steps {
					// steps run as root with every capability: on another goroutine
					var wg sync.WaitGroup
					var err error
					wg.Add(1)
					go func() { defer wg.Done(); err = s.do(dir) }()
					wg.Wait()
					if err != nil {
						msgs = append(msgs, fmt.Sprintf("%s: %v", s.name, err))
						return
					}
					check(s.name)
				}
				w.mu.Lock()
				broken = w.broken
				w.mu.Unlock()
			})
			require.Empty(t, msgs)
			require.False(t, broken)
			require.Equal(t, c.seen, seen, "the case does not do what it says")
		})
	}
}

// TestReview2WatchChurnCases (holds; regression for bee15ed's ENOENT,
// ENOTDIR and EACCES skips): a directory swapped with a symbolic link to a
// directory (RENAME_EXCHANGE), replaced by one and back, removed and made
// again under the same name, its mode and its parent's toggled between
// unreadable, readable, search-only and read-only, all while the watcher
// walks: once the churn stops (in each of its states) the snapshot equals
// a fresh walk and the watcher is not broken.
func TestReview2WatchChurnCases(t *testing.T) {
	cases := map[string]func(dir string, i int){
		"directory swapped with a symlink to a directory": func(dir string, i int) {
			_ = unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, "w/d"), unix.AT_FDCWD, filepath.Join(dir, "w/l"), unix.RENAME_EXCHANGE)
		},
		"directory replaced by a symlink and back": func(dir string, i int) {
			d := filepath.Join(dir, "w/d")
			if i%2 == 0 {
				_ = os.Rename(d, filepath.Join(dir, "w/saved"))
				_ = os.Symlink(filepath.Join(dir, "other"), d+".tmp")
				_ = os.Rename(d+".tmp", d)
			} else {
				_ = os.Remove(d)
				_ = os.Rename(filepath.Join(dir, "w/saved"), d)
			}
		},
		"same name removed and made again": func(dir string, i int) {
			d := filepath.Join(dir, "w/d")
			_ = os.RemoveAll(d)
			_ = os.MkdirAll(filepath.Join(d, "s"), 0o755)
			_ = os.WriteFile(filepath.Join(d, "s", fmt.Sprint(i%3)), []byte("x"), 0o644)
		},
		"chmod toggled": func(dir string, i int) {
			_ = os.Chmod(filepath.Join(dir, "w/d"), []os.FileMode{0, 0o755, 0o311, 0o644}[i%4])
		},
		"parent chmod toggled": func(dir string, i int) {
			_ = os.Chmod(filepath.Join(dir, "w"), []os.FileMode{0, 0o755, 0o311, 0o644}[i%4])
		},
	}
	for name, churn := range cases {
		t.Run(name, func(t *testing.T) {
			for _, stopAt := range []int{0, 1, 2, 3} {
				dir := t.TempDir()
				reviewWrite(t, filepath.Join(dir, "w/d/f"), "x")
				reviewWrite(t, filepath.Join(dir, "w/d/s/g"), "x")
				reviewWrite(t, filepath.Join(dir, "w/l/h"), "x")
				reviewWrite(t, filepath.Join(dir, "other/o"), "x")
				reviewWrite(t, filepath.Join(dir, "other/os/p"), "x")
				require.NoError(t, os.Remove(filepath.Join(dir, "w/l/h")))
				require.NoError(t, os.Remove(filepath.Join(dir, "w/l")))
				require.NoError(t, os.Symlink(filepath.Join(dir, "other"), filepath.Join(dir, "w/l")))
				t.Cleanup(func() {
					_ = os.Chmod(filepath.Join(dir, "w"), 0o755)
					_ = os.Chmod(filepath.Join(dir, "w/d"), 0o755)
				})
				var msg string
				var broken bool
				withoutDACOverride(t, func() {
					w := newWSWatch(dir)
					defer w.close()
					stop := make(chan struct{})
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; ; i++ {
							select {
							case <-stop:
								for ; i%4 != stopAt; i++ {
									churn(dir, i)
								}
								return
							default:
							}
							churn(dir, i)
						}
					}()
					for range 2000 {
						w.snapshot()
					}
					close(stop)
					wg.Wait()
					want, got := walkFiles(dir, nil), w.snapshot()
					if fmt.Sprint(want) != fmt.Sprint(got) {
						msg = fmt.Sprintf("walk %v, watcher %v", want, got)
					}
					w.mu.Lock()
					broken = w.broken
					w.mu.Unlock()
				})
				require.Empty(t, msg, "stopped at %d", stopAt)
				require.False(t, broken)
			}
		})
	}
}
