package holdlisten

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/freeport"
)

// A hold directory that is not one stops electd and the holder with an
// error naming it, before anything touches ZooKeeper (the servers here
// answer nothing); a relative one is a configuration error (exit 2).
func TestWrongHoldDirIsAClearError(t *testing.T) {
	listen, err := freeport.Addrs(2)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		name, dir, want string
		status          int
	}{
		{"missing", missing, "no such file or directory", 1},
		{"a file", file, "is not a directory", 1},
		{"relative", "run/electd-listen", "listen_hold_dir: \"run/electd-listen\" is not an absolute path", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := electdtest.Start(t, electdtest.Spec{Name: "web-1", Config: &electdtest.Config{
				ID: "web-1", Servers: []string{"127.0.0.1:1"}, Path: "/holdlisten/wrong", ProxyListen: listen,
				ProxyApp: "127.0.0.1:9", LogFormat: "text",
			}, Args: []string{"--listen_hold_dir", c.dir}})
			err, ok := p.Wait(30 * time.Second)
			if !ok {
				t.Fatal("electd still runs")
			}
			if got := electdtest.ExitStatus(err); got != c.status {
				t.Errorf("exit status %d, want %d", got, c.status)
			}
			if log := p.LogTail(20); !strings.Contains(log, c.want) {
				t.Errorf("log lacks %q:\n%s", c.want, log)
			}
			if c.status != 1 {
				return
			}
			h := electdtest.StartProgram(t, electdtest.Binary(t), electdtest.Spec{Name: "holder", Args: []string{"hold-listener", "--dir", c.dir}})
			err, ok = h.Wait(30 * time.Second)
			if !ok {
				t.Fatal("the holder still runs")
			}
			if got := electdtest.ExitStatus(err); got != 1 {
				t.Errorf("holder exit status %d, want 1", got)
			}
			if log := h.LogTail(20); !strings.Contains(log, c.want) {
				t.Errorf("holder log lacks %q:\n%s", c.want, log)
			}
		})
	}
}
