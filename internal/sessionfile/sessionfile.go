// Package sessionfile keeps a ZooKeeper session's id and password in a
// file, so that a restarted electd resumes its session (docs/notes/
// resume.md). The file is meant for a volume only a restart of the same
// pod sees: in Kubernetes a memory-backed emptyDir.
//
// Two guards keep one session in one process. The process holds an
// exclusive flock on the file for its life (the kernel releases it when
// the process dies, SIGKILL included), so a second process on the same file
// neither resumes nor writes. The file records whose session it is (the
// pod's UID, host name, participant id, election path and servers), so a
// copy of the volume on another pod is ignored.
package sessionfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/electd/electd/internal/election/zksession"
)

// Identity is what a kept session belongs to: a file written for another
// identity is ignored.
type Identity struct {
	PodUID   string `json:"pod_uid"` // the downward API's metadata.uid; empty outside Kubernetes
	Hostname string `json:"hostname"`
	ID       string `json:"id"`
	Path     string `json:"path"`
	Servers  string `json:"servers"`
}

// Why says why nothing is resumed; "" when a session is offered.
type Why string

const (
	WhyNone     Why = ""
	WhyEmpty    Why = "the session file holds no session (first start, or the last one shut down cleanly)"
	WhyLocked   Why = "another process holds the session file"
	WhyOther    Why = "the session file belongs to another pod or configuration"
	WhyUnusable Why = "the session file is unreadable"
)

// record is the file's content; version 1.
type record struct {
	Version  int      `json:"version"`
	Identity Identity `json:"identity"`
	Session  int64    `json:"session"`
	Password []byte   `json:"password"` // base64 in JSON
}

// File is an open, locked session file: the zksession.CredentialKeeper of
// one process.
type File struct {
	f     *os.File
	ident Identity
}

// Open opens (creating, mode 0600) and locks the file at path. It returns
// the file and the credentials kept for ident, or why none are; with
// WhyLocked it returns no File: this process must neither resume nor keep.
func Open(path string, ident Identity) (*File, *zksession.Credentials, Why, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, WhyNone, fmt.Errorf("session file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil, WhyLocked, nil
		}
		return nil, nil, WhyNone, fmt.Errorf("session file: lock %s: %w", path, err)
	}
	// A file made by hand, or by an older image, may be wider than 0600.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, nil, WhyNone, fmt.Errorf("session file: %w", err)
	}
	sf := &File{f: f, ident: ident}
	c, why := sf.read()
	return sf, c, why, nil
}

func (sf *File) read() (*zksession.Credentials, Why) {
	b, err := io.ReadAll(io.LimitReader(sf.f, 64<<10))
	switch {
	case err != nil:
		return nil, WhyUnusable
	case len(b) == 0:
		return nil, WhyEmpty
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil || r.Version != 1 {
		return nil, WhyUnusable // e.g. a write cut short by a kill
	}
	if r.Identity != sf.ident {
		return nil, WhyOther
	}
	c := &zksession.Credentials{ID: r.Session, Password: r.Password}
	if c.ID == 0 || len(c.Password) == 0 {
		return nil, WhyUnusable
	}
	return c, WhyNone
}

// Keep replaces the file's content with c. The file is rewritten in place,
// not renamed over: the lock is on its inode.
func (sf *File) Keep(c zksession.Credentials) error {
	b, err := json.Marshal(record{Version: 1, Identity: sf.ident, Session: c.ID, Password: c.Password})
	if err != nil {
		return err
	}
	if err := sf.f.Truncate(0); err != nil {
		return fmt.Errorf("session file: %w", err)
	}
	if _, err := sf.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("session file: %w", err)
	}
	return sf.f.Sync()
}

// Forget empties the file: the session is closed, nothing to resume. It is
// emptied, not removed, so that the lock stays on the one inode.
func (sf *File) Forget() error {
	if err := sf.f.Truncate(0); err != nil {
		return fmt.Errorf("session file: %w", err)
	}
	return nil
}

// Close releases the lock (the process's exit does too).
func (sf *File) Close() error { return sf.f.Close() }
