package sessionfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/electd/electd/internal/election/zksession"
)

var me = Identity{PodUID: "uid-1", Hostname: "web-1", ID: "web-1", Path: "/e", Servers: "zk:2181"}

func TestKeepThenResume(t *testing.T) {
	p := filepath.Join(t.TempDir(), "session")
	f, c, why, err := Open(p, me)
	if err != nil || c != nil || why != WhyEmpty {
		t.Fatalf("first open: %v %v %q", c, err, why)
	}
	want := zksession.Credentials{ID: 0x1234, Password: []byte("secret-password!")}
	if err := f.Keep(want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Fatalf("mode %v, want 0600", got)
	}
	f.Close()

	f, c, why, err = Open(p, me)
	if err != nil || why != WhyNone || c == nil || c.ID != want.ID || !bytes.Equal(c.Password, want.Password) {
		t.Fatalf("second open: %+v %v %q", c, err, why)
	}
	if err := f.Forget(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, c, why, _ = Open(p, me); c != nil || why != WhyEmpty {
		t.Fatalf("after Forget: %v %q", c, why)
	}
}

func TestOtherIdentityIgnored(t *testing.T) {
	p := filepath.Join(t.TempDir(), "session")
	f, _, _, err := Open(p, me)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Keep(zksession.Credentials{ID: 7, Password: []byte("pw")})
	f.Close()
	for name, change := range map[string]func(*Identity){
		"pod":     func(i *Identity) { i.PodUID = "uid-2" },
		"host":    func(i *Identity) { i.Hostname = "web-2" },
		"id":      func(i *Identity) { i.ID = "web-2" },
		"path":    func(i *Identity) { i.Path = "/f" },
		"servers": func(i *Identity) { i.Servers = "zk2:2181" },
	} {
		t.Run(name, func(t *testing.T) {
			other := me
			change(&other)
			f, c, why, err := Open(p, other)
			if err != nil || c != nil || why != WhyOther {
				t.Fatalf("open as %+v: %v %v %q", other, c, err, why)
			}
			f.Close()
		})
	}
}

// The lock is per open file description, as between two processes.
func TestSecondOpenerIsLockedOut(t *testing.T) {
	p := filepath.Join(t.TempDir(), "session")
	f, _, _, err := Open(p, me)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Keep(zksession.Credentials{ID: 7, Password: []byte("pw")})
	g, c, why, err := Open(p, me)
	if err != nil || g != nil || c != nil || why != WhyLocked {
		t.Fatalf("second open while locked: %v %v %v %q", g, c, err, why)
	}
	f.Close()
	g, c, why, err = Open(p, me)
	if err != nil || c == nil || why != WhyNone {
		t.Fatalf("open after the holder closed: %v %v %q", c, err, why)
	}
	g.Close()
}

func TestTornFileIgnored(t *testing.T) {
	p := filepath.Join(t.TempDir(), "session")
	if err := os.WriteFile(p, []byte(`{"version":1,"identity":{"pod_uid":"uid-1"`), 0o644); err != nil {
		t.Fatal(err)
	}
	f, c, why, err := Open(p, me)
	if err != nil || c != nil || why != WhyUnusable {
		t.Fatalf("torn file: %v %v %q", c, err, why)
	}
	f.Close()
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestCredentialsNeverPrintThePassword(t *testing.T) {
	c := zksession.Credentials{ID: 0xabc, Password: []byte("hunter2-password")}
	for _, s := range []string{c.String(), c.GoString(), c.LogValue().String()} {
		if strings.Contains(s, "hunter2") || !strings.Contains(s, "0xabc") {
			t.Fatalf("printed %q", s)
		}
	}
}
