package listenhold

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func open(t *testing.T, dir, role string) *Holder {
	t.Helper()
	h, err := Open(dir, role, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// bound binds a loopback port through h, as Acquire does for a port
// nobody holds, and returns its address.
func bound(t *testing.T, h *Holder) string {
	t.Helper()
	fd, err := h.bind("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	key, err := Key(fd)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestOpenRefusesAWrongDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{"relative/dir", "not an absolute path"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{file, "is not a directory"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			_, err := Open(c.dir, RoleElectd, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%q) = %v, want an error saying %q", c.dir, err, c.want)
			}
		})
	}
}

func TestSocketIsTheOwnersAlone(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, RoleElectd)
	st, err := os.Stat(filepath.Join(dir, "electd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("socket mode %v, want 0600", got)
	}
}

// A port electd bound is handed to the holder; with electd gone the port
// still takes connections, and a new electd takes the same socket back and
// accepts what waited meanwhile. A new holder takes its copy from electd.
func TestThePortOutlivesEitherProcess(t *testing.T) {
	dir := t.TempDir()
	holder := open(t, dir, RoleHolder)
	first := open(t, dir, RoleElectd)
	addr := bound(t, first)
	if got := holder.Held(); len(got) != 1 || got[0] != addr {
		t.Fatalf("holder keeps %v, want [%s]", got, addr)
	}
	first.Close() // electd gone: its copies with it

	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial while only the holder keeps the port: %v", err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "waited"); err != nil {
		t.Fatal(err)
	}

	second := open(t, dir, RoleElectd)
	ln, err := second.Acquire(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.Addr().String() != addr {
		t.Errorf("listener on %s, want %s", ln.Addr(), addr)
	}
	got := make(chan string, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer s.Close()
		b := make([]byte, 6)
		_, err = io.ReadFull(s, b)
		got <- string(b)
	}()
	select {
	case s := <-got:
		if s != "waited" {
			t.Errorf("accepted %q, want the connection that waited", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection that waited was never accepted")
	}

	holder.Close()
	again := open(t, dir, RoleHolder)
	if err := again.Fetch(); err != nil {
		t.Fatal(err)
	}
	if got := again.Held(); len(got) != 1 || got[0] != addr {
		t.Errorf("restarted holder keeps %v, want [%s]", got, addr)
	}
}

// fakePeer answers every list with fd under key, as a broken or hostile
// process in the directory would.
func fakePeer(t *testing.T, dir, key string, fd int) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "holder.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			if _, _, fds, err := readMsg(c); err == nil {
				closeAll(fds)
				_ = writeMsg(c, verbOK, []string{key}, []int{fd})
			}
			c.Close()
		}
	}()
}

func TestAcquireRefusesWhatIsNoListenerOnItsAddress(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherFD, err := dupOf(other.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(otherFD)
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer closeAll(pipe[:])
	udp, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(udp)
	const addr = "127.0.0.1:4041"
	for _, c := range []struct {
		name, want string
		fd         int
	}{
		{"a pipe", "not a listening TCP socket", pipe[0]},
		{"a UDP socket", "not a listening TCP socket: it is not a stream socket", udp},
		{"a listener on another port", "listens on " + other.Addr().String(), otherFD},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fakePeer(t, dir, addr, c.fd)
			h := open(t, dir, RoleElectd)
			ln, err := h.Acquire(context.Background(), addr)
			if err == nil {
				ln.Close()
				t.Fatal("Acquire took it")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Acquire: %v, want an error saying %q", err, c.want)
			}
		})
	}
}

func TestAcquireNeedsAFixedPort(t *testing.T) {
	h := open(t, t.TempDir(), RoleElectd)
	if _, err := h.Acquire(context.Background(), "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "fixed host:port") {
		t.Errorf("Acquire of port 0: %v, want a refusal", err)
	}
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		addr, key string
		want      bool
	}{
		{":4041", "[::]:4041", true},
		{":4041", "0.0.0.0:4041", true},
		{"0.0.0.0:4041", "[::]:4041", true},
		{":4041", "127.0.0.1:4041", false},
		{":4041", "[::]:4042", false},
		{"127.0.0.1:4041", "127.0.0.1:4041", true},
		{"127.0.0.1:4041", "[::ffff:127.0.0.1]:4041", true},
		{"127.0.0.1:4041", "127.0.0.2:4041", false},
		{"localhost:4041", "127.0.0.1:4041", true},
	} {
		got, err := matches(c.addr, c.key)
		if err != nil || got != c.want {
			t.Errorf("matches(%q, %q) = %v, %v; want %v", c.addr, c.key, got, err, c.want)
		}
	}
}
