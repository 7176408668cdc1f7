package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	mcpflow "github.com/mcpflow/mcpflow"
)

// Workspace is one user+thread's directory tree under workspace.root:
// <root>/users/<user>/threads/<thread>/user-data/{workspace,uploads,outputs}
// (spec §3.10). Stdio servers run with Dir as their default cwd and TempDir
// as their default TMPDIR/TMP/TEMP.
type Workspace struct {
	Root     string // workspace.root, absolute
	UserData string // <root>/users/<user>/threads/<thread>/user-data (absolute, symlinks resolved)
	Dir      string // UserData/workspace: the default cwd of stdio servers
	TempDir  string // Dir/.mcp/tmp, mode 0700: default TMPDIR/TMP/TEMP
}

// wsReservedDir is the internal directory inside a workspace; it is skipped
// at any depth by Snapshot and Changed.
const wsReservedDir = ".mcp"

// wsThreadDirs are the directories created under user-data for every thread.
var wsThreadDirs = []string{"workspace", "uploads", "outputs"}

// Prepare validates the ids (mcpflow.ValidateID: none escapes the root)
// and creates user-data/{workspace,uploads,outputs} and workspace/.mcp/tmp
// (0700), idempotently; user-data must resolve inside the root.
func Prepare(root, userID, threadID string) (*Workspace, error) {
	key := root + "\x00" + userID + "\x00" + threadID
	if e := wsPrepared.get(key); e != nil && e.intact() {
		return e.w, nil
	}
	w, err := prepareWorkspace(root, userID, threadID)
	if err != nil {
		return nil, err
	}
	wsPrepared.put(key, &wsCacheEntry{w: w, tmp: openTmpHandle(w.Dir, wsTmpRel)})
	wsWatches.verify(w.Dir)
	return w, nil
}

// wsPrepared caches prepared workspaces (at most wsCacheMax, younger than
// wsRecheckEvery): a known thread's call checks one directory only.
var wsPrepared = &wsCache{m: map[string]*wsCacheEntry{}}

const wsCacheMax = 1024

type wsCache struct {
	mu        sync.Mutex
	m         map[string]*wsCacheEntry
	nextSweep time.Time
}

// get returns the cached entry of key if it was prepared less than
// wsRecheckEvery ago.
func (c *wsCache) get(key string) *wsCacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[key]; e != nil && time.Since(e.at) < wsRecheckEvery {
		return e
	}
	return nil
}

// put caches e under key, sweeping expired entries every wsRecheckEvery
// and whenever the cache is full; when it is still full, e is not cached.
// The handle of an entry that leaves the cache is closed (a check running
// on it meanwhile fails, and the full preparation runs).
func (c *wsCache) put(key string, e *wsCacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	old, ok := c.m[key]
	if !ok && (len(c.m) >= wsCacheMax || !now.Before(c.nextSweep)) {
		for k, o := range c.m {
			if now.Sub(o.at) >= wsRecheckEvery {
				o.close()
				delete(c.m, k)
			}
		}
		c.nextSweep = now.Add(wsRecheckEvery)
		if len(c.m) >= wsCacheMax {
			e.close()
			return
		}
	}
	if ok {
		old.close()
	}
	e.at = now
	c.m[key] = e
}

// fsClockSlack covers the lag of file timestamps behind time.Now (a tick).
const fsClockSlack = 20 * time.Millisecond

// wsRecheckEvery bounds how long a cached workspace is reused with only the
// temp-directory check (intact); after it, the full preparation runs again.
const wsRecheckEvery = 5 * time.Second

type wsCacheEntry struct {
	w   *Workspace
	at  time.Time
	tmp *tmpHandle // a handle on w.Dir and the temp directory's identity (Linux), or nil
}

// intact reports whether the private temp directory (inside .mcp inside
// Dir) is still the real 0700 directory prepared, with one system call:
// an fstatat of .mcp/tmp below a handle on Dir opened when it was
// prepared, which must find the same inode (not removed, renamed or
// replaced, not a symbolic link); without a handle, an lstat of its path.
// The handle's walk is two names long, not the path's 12 directories,
// which cost about 12 µs of CPU per stdio call in the deployed process
// (cold caches between calls) against 3 for the fstatat. What it does not
// see is Dir or a directory above it renamed: that is found by the full
// preparation at most wsRecheckEvery later, as is a parent replaced by a
// symbolic link (which the lstat followed).
func (e *wsCacheEntry) intact() bool {
	if e.tmp != nil {
		return e.tmp.intact(wsTmpRel)
	}
	fi, err := os.Lstat(e.w.TempDir)
	return err == nil && fi.IsDir() && fi.Mode().Perm() == 0o700
}

func (e *wsCacheEntry) close() {
	if e.tmp != nil {
		e.tmp.close()
	}
}

func prepareWorkspace(root, userID, threadID string) (*Workspace, error) {
	if err := mcpflow.ValidateID("user_id", userID); err != nil {
		return nil, err
	}
	if err := mcpflow.ValidateID("thread_id", threadID); err != nil {
		return nil, err
	}
	if strings.TrimSpace(root) == "" {
		return nil, mcpflow.Errorf(mcpflow.EInvalid, "workspace.root must not be empty")
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("prepare workspace: resolve root: %w", err)
	}
	userData := filepath.Join(absRoot, "users", userID, "threads", threadID, "user-data")
	for _, d := range wsThreadDirs {
		if err := os.MkdirAll(filepath.Join(userData, d), 0o755); err != nil {
			return nil, fmt.Errorf("prepare workspace: create %s directory: %w", d, err)
		}
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return nil, fmt.Errorf("prepare workspace: resolve root: %w", err)
	}
	realUserData, err := filepath.EvalSymlinks(userData)
	if err != nil {
		return nil, fmt.Errorf("prepare workspace: resolve user-data: %w", err)
	}
	if !wsWithin(realRoot, realUserData) {
		return nil, fmt.Errorf("prepare workspace: user-data directory %s resolves outside the workspace root", userData)
	}
	w := &Workspace{
		Root:     absRoot,
		UserData: realUserData,
		Dir:      filepath.Join(realUserData, "workspace"),
	}
	w.TempDir = filepath.Join(w.Dir, wsReservedDir, "tmp")
	if fi, err := os.Lstat(w.Dir); err != nil {
		return nil, fmt.Errorf("prepare workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("prepare workspace: %s is not a directory", w.Dir)
	}
	for _, d := range []string{filepath.Join(w.Dir, wsReservedDir), w.TempDir} {
		if err := wsEnsurePrivateDir(d); err != nil {
			return nil, fmt.Errorf("prepare workspace: %w", err)
		}
	}
	return w, nil
}

// wsEnsurePrivateDir makes path a real directory (not a symlink) with mode
// 0700. Anything else in its place is removed first: the directory is
// reserved for mcpflow, and a server must not redirect it elsewhere.
func wsEnsurePrivateDir(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && !fi.IsDir():
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("replace %s: %w", path, err)
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("inspect %s: %w", path, err)
	}
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
		return fmt.Errorf("create %s: not a directory", path)
	}
	if err := os.Chmod(path, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	return nil
}

// wsWithin reports whether path is dir or lies below it (both clean and
// absolute).
func wsWithin(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// Env returns TMPDIR, TMP and TEMP set to TempDir. Callers merge it under
// the operator's env: a variable the operator set wins.
func (w *Workspace) Env() map[string]string {
	return map[string]string{"TMPDIR": w.TempDir, "TMP": w.TempDir, "TEMP": w.TempDir}
}

// wsFileStat is what a FileSnapshot records for one file.
type wsFileStat struct {
	mtimeNS int64
	size    int64
}

// FileSnapshot records (mtime_ns, size) of the regular files under a
// workspace's Dir, keyed by absolute path. Symlinks are not followed and any
// `.mcp` directory is skipped at any depth.
type FileSnapshot map[string]wsFileStat

// Snapshot records the regular files under Dir. Unreadable entries are
// skipped.
func (w *Workspace) Snapshot() FileSnapshot {
	if w == nil {
		return FileSnapshot{}
	}
	return walkFiles(w.Dir, nil)
}

// walkFiles records the regular files under dir (outside .mcp), calling
// onDir for every directory before its entries are read.
func walkFiles(dir string, onDir func(path string)) FileSnapshot {
	snap := FileSnapshot{}
	if dir == "" {
		return snap
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && path != dir {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if d.Name() == wsReservedDir && path != dir {
				return fs.SkipDir
			}
			if onDir != nil {
				onDir(path)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		snap[path] = wsFileStat{mtimeNS: info.ModTime().UnixNano(), size: info.Size()}
		return nil
	})
	return snap
}

// ChangedSince returns the regular files under Dir (outside .mcp) written
// since since (less fsClockSlack), sorted, from the directory's watcher.
func (w *Workspace) ChangedSince(since time.Time) []string {
	if w == nil || w.Dir == "" {
		return nil
	}
	return wsWatches.get(w.Dir).changed(since.Add(-fsClockSlack).UnixNano())
}

// changedIn returns the files of snap with an mtime at or after cut, sorted.
func changedIn(snap FileSnapshot, cut int64) []string {
	var out []string
	for path, st := range snap {
		if st.mtimeNS >= cut {
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// wsWatches holds a watcher (an inotify descriptor) per workspace in use,
// the least recently used closed beyond wsWatchMax.
var wsWatches = &wsWatchCache{m: map[string]*wsWatchEntry{}}

const wsWatchMax = 256

type wsWatchCache struct {
	mu   sync.Mutex
	m    map[string]*wsWatchEntry
	tick uint64
}

type wsWatchEntry struct {
	w    *wsWatch
	used uint64
}

// verify has dir's watcher, if there is one, check that dir is still the
// directory it watches (wsWatch.verify).
func (c *wsWatchCache) verify(dir string) {
	c.mu.Lock()
	e := c.m[dir]
	c.mu.Unlock()
	if e != nil {
		e.w.verify()
	}
}

// get returns the watcher of dir, creating it (and closing the least
// recently used one beyond wsWatchMax).
func (c *wsWatchCache) get(dir string) *wsWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	if e := c.m[dir]; e != nil {
		e.used = c.tick
		return e.w
	}
	if len(c.m) >= wsWatchMax {
		var oldest string
		var min uint64
		for d, e := range c.m {
			if oldest == "" || e.used < min {
				oldest, min = d, e.used
			}
		}
		c.m[oldest].w.close()
		delete(c.m, oldest)
	}
	w := newWSWatch(dir)
	c.m[dir] = &wsWatchEntry{w: w, used: c.tick}
	return w
}

// Foreign reports whether uri is a file: URI naming a path under the
// workspace root that is not this thread's user-data: another user's or
// thread's files, which a stdio server running here must not be asked for
// (however the path is spelled: ".." segments, escapes, symbolic links).
func (w *Workspace) Foreign(uri string) bool {
	if len(uri) < 5 || !strings.EqualFold(uri[:5], "file:") {
		return false
	}
	u, err := url.Parse(uri)
	if err != nil || u.Opaque != "" {
		return true // a file: URI this reads no path of: not to be sent on
	}
	p := filepath.Clean("/" + u.Path)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	roots := []string{w.Root}
	if real, err := filepath.EvalSymlinks(w.Root); err == nil && real != w.Root {
		roots = append(roots, real)
	}
	for _, root := range roots {
		if wsWithin(root, p) && !wsWithin(w.UserData, p) {
			return true
		}
	}
	return false
}
