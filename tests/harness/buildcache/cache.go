// Package buildcache keeps things the tests build (the electd binary, compiled Java
// classes) in a directory per content key under the user's cache directory, so that one
// `go test ./...` run builds each once although several test binaries ask for it at the
// same time.
//
// An entry is <cache>/electd/<kind>/<key>. Each process that uses an entry keeps a shared
// file lock (flock) on <key>.lock until it exits (the kernel drops flocks with the
// process); pruning deletes only entries nobody holds: beyond the most recently used few,
// never one in use. Whoever finds the entry missing builds it under an exclusive lock on a
// second file, <key>.build, while the others wanting it block there, then find the
// finished entry; it is filled in a temporary directory and renamed into place, so a
// half-built entry is never seen. The two locks are apart so that a process holding an
// entry for its whole life never keeps another from using it (with one lock, the
// exclusive lock taken to check for the entry waited for every holder to exit, and
// make test ran its packages that start electd one at a time).
package buildcache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// keep is how many unused entries of a kind survive pruning, most recently used first:
// enough for a few worktrees or branches, not a pile of stale binaries.
const keep = 6

// held are the lock files of the entries this process uses, open until it exits.
var (
	heldMu sync.Mutex
	held   = map[string]*os.File{}
)

// Dir returns the directory of entry key of kind, calling fill on an empty directory to
// build it when it does not exist yet. Concurrent callers, in this process or others,
// wait for one fill. A failed fill leaves no entry; the next caller tries again.
func Dir(kind, key string, fill func(dir string) error) (string, error) {
	root, err := Root(kind)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	lockPath := dir + ".lock"
	heldMu.Lock()
	defer heldMu.Unlock()
	if held[lockPath] != nil {
		return dir, nil
	}
	// The shared lock first: from here on no pruner removes the entry.
	lock, err := lockFile(lockPath, syscall.LOCK_SH)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err != nil {
		build, err := lockFile(dir+".build", syscall.LOCK_EX)
		if err != nil {
			lock.Close()
			return "", err
		}
		err = ensure(root, dir, fill)
		build.Close()
		if err != nil {
			lock.Close()
			return "", err
		}
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now) // last use, for pruning
	held[lockPath] = lock
	prune(root)
	return dir, nil
}

// Root returns the directory holding every entry of kind, creating it.
func Root(kind string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	root := filepath.Join(base, "electd", kind)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("buildcache: %w", err)
	}
	return root, nil
}

// lockFile opens path and takes its lock (how: LOCK_SH or LOCK_EX), blocking. A pruner
// may have removed the file while this process waited for it: then the lock is on a file
// nobody else will open, so it starts over on the path's new file.
func lockFile(path string, how int) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("buildcache: %w", err)
		}
		if err := flock(f, how); err != nil {
			f.Close()
			return nil, err
		}
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(fi, pi) {
			return f, nil
		}
		f.Close()
	}
}

// Lock takes an exclusive flock on path (created if need be), for work one
// process on the machine may do at a time: when another holds it, waiting
// is called once, then Lock blocks until it is free. The kernel drops the
// lock if its holder dies; unlock drops it.
func Lock(path string, waiting func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("buildcache: %w", err)
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if waiting != nil {
			waiting()
		}
		if err := flock(f, syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() { f.Close() }, nil
}

// ensure fills dir unless it exists; the caller holds the entry's build lock.
func ensure(root, dir string, fill func(string) error) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(root, ".fill-")
	if err != nil {
		return fmt.Errorf("buildcache: %w", err)
	}
	if err := fill(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, statErr := os.Stat(dir); statErr == nil {
			return nil // filled meanwhile by a process holding a removed lock file
		}
		return fmt.Errorf("buildcache: %w", err)
	}
	return nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return fmt.Errorf("buildcache: lock %s: %w", f.Name(), err)
			}
			return nil
		}
	}
}

// prune deletes the entries of root beyond the keep most recently used that no process
// holds, and fills abandoned by a process that died (older than an hour).
func prune(root string) {
	des, err := os.ReadDir(root)
	if err != nil {
		return
	}
	type entry struct {
		name string
		used time.Time
	}
	var entries []entry
	for _, de := range des {
		info, err := de.Info()
		if err != nil || !de.IsDir() {
			continue
		}
		if strings.HasPrefix(de.Name(), ".fill-") {
			if time.Since(info.ModTime()) > time.Hour {
				os.RemoveAll(filepath.Join(root, de.Name()))
			}
			continue
		}
		entries = append(entries, entry{de.Name(), info.ModTime()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return b.used.Compare(a.used) })
	for i, e := range entries {
		if i >= keep {
			removeUnheld(filepath.Join(root, e.name))
		}
	}
}

// removeUnheld deletes dir and its lock files if no process holds the entry.
func removeUnheld(dir string) {
	lock, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer lock.Close()
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // in use, or being built
	}
	// The lock file goes first: whoever opened it meanwhile sees it gone once it holds
	// the lock (lockFile) and starts over rather than use a directory being removed.
	os.Remove(dir + ".lock")
	os.RemoveAll(dir)
	os.Remove(dir + ".build")
}
