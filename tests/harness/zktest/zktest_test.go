package zktest

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// never fails the test if cond holds at any poll during d.
func never(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			t.Fatalf("%s", what)
		}
	}
}

func waitReady(t *testing.T, e *Ensemble) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// client is a go-zookeeper connection that records its session events.
type client struct {
	*zk.Conn
	mu     sync.Mutex
	events []zk.State
}

func connect(t *testing.T, servers []string, sessionTimeout time.Duration) *client {
	t.Helper()
	c := &client{}
	conn, _, err := zk.Connect(servers, sessionTimeout, zk.WithLogger(nopLogger{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession {
				c.mu.Lock()
				c.events = append(c.events, ev.State)
				c.mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	c.Conn = conn
	c.waitSession(t)
	return c
}

func (c *client) waitSession(t *testing.T) {
	t.Helper()
	wait.For(t, 15*time.Second, "a ZooKeeper session", func() bool { return c.State() == zk.StateHasSession })
}

// count returns how many times the client entered state s.
func (c *client) count(s zk.State) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, st := range c.events {
		if st == s {
			n++
		}
	}
	return n
}

func create(t *testing.T, c *client, path, data string) {
	t.Helper()
	if _, err := c.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

func get(t *testing.T, c *client, path string) string {
	t.Helper()
	b, _, err := c.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return string(b)
}

// writeAndStop creates path with data through a client of e, then calls stop and
// checks that each member of stopped is down.
func writeAndStop(t *testing.T, e *Ensemble, path, data string, stop func() error, stopped ...*Member) {
	t.Helper()
	c := connect(t, e.Servers(), 4*time.Second)
	create(t, c, path, data)
	c.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, m := range stopped {
		if m.Running() || m.Mode() != "" {
			t.Fatalf("after stopping %v: Running() = %v, Mode() = %q", m, m.Running(), m.Mode())
		}
	}
}

// readBack checks that path holds want, read through a new client of servers.
func readBack(t *testing.T, servers []string, path, want string) {
	t.Helper()
	if got := get(t, connect(t, servers, 4*time.Second), path); got != want {
		t.Fatalf("%s = %q through %v, want %q", path, got, servers, want)
	}
}

func TestClasspath(t *testing.T) {
	Require(t)
	for name, f := range map[string]func() (string, error){"server": Classpath, "curator": CuratorClasspath} {
		cp, err := f()
		if err != nil {
			t.Fatalf("%s classpath: %v", name, err)
		}
		if !strings.Contains(cp, "/zookeeper.jar") {
			t.Errorf("%s classpath %q lacks zookeeper.jar", name, cp)
		}
	}
	if _, err := classpath([]jar{{"no-such-lib", "libno-such-java"}}); err == nil ||
		!strings.Contains(err.Error(), "no-such-lib.jar") || !strings.Contains(err.Error(), "apt-get install -y libno-such-java") {
		t.Errorf("missing jar error = %v, want it to name the jar and the package", err)
	}
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := Start(t, Options{})
	t.Logf("standalone server serving after %v", time.Since(start))
	m := e.Member(1)
	if got, want := e.ConnectString(), m.Addr(); got != want {
		t.Fatalf("ConnectString() = %q, want %q", got, want)
	}

	t.Run("ruok", func(t *testing.T) {
		if out, err := m.FourLetter("ruok"); err != nil || out != "imok" {
			t.Fatalf("ruok = %q, %v; want imok", out, err)
		}
		if got := m.Mode(); got != "standalone" {
			t.Fatalf("Mode() = %q, want standalone", got)
		}
		if e.Leader() != m {
			t.Fatalf("Leader() = %v, want %v", e.Leader(), m)
		}
	})

	t.Run("stop and start keep data", func(t *testing.T) {
		writeAndStop(t, e, "/kept", "v1", m.Stop, m)
		if conn, err := net.DialTimeout("tcp", m.Addr(), time.Second); err == nil {
			conn.Close()
			t.Fatal("the client port of a stopped server accepts connections")
		}
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
		waitReady(t, e)
		readBack(t, e.Servers(), "/kept", "v1")
	})
}

func TestEnsemble(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := Start(t, Options{Servers: 3})
	t.Logf("3 servers serving after %v", time.Since(start))

	t.Run("one leader", func(t *testing.T) {
		if got := len(e.Servers()); got != 3 {
			t.Fatalf("%d servers, want 3", got)
		}
		var leaders, followers int
		for i, m := range e.Members() {
			if m.ID() != i+1 || e.Member(i+1) != m || e.Servers()[i] != m.Addr() {
				t.Fatalf("member %d: ID() = %d, Member(%d) = %v", i, m.ID(), i+1, e.Member(i+1))
			}
			switch m.Mode() {
			case "leader":
				leaders++
				if e.Leader() != m {
					t.Fatalf("Leader() = %v, want %v", e.Leader(), m)
				}
			case "follower":
				followers++
			}
		}
		if leaders != 1 || followers != 2 {
			t.Fatalf("%d leaders and %d followers, want 1 and 2", leaders, followers)
		}
	})

	t.Run("ServerOfSession", func(t *testing.T) {
		c := connect(t, e.Servers(), 4*time.Second)
		m := e.ServerOfSession(c.SessionID())
		if m == nil || m.Addr() != c.Server() {
			t.Fatalf("ServerOfSession(%#x) = %v, want the server at %s", c.SessionID(), m, c.Server())
		}
		if m := e.ServerOfSession(0x7fff); m != nil {
			t.Fatalf("ServerOfSession(unknown) = %v, want nil", m)
		}
	})

	t.Run("kill and restart the leader keep data", func(t *testing.T) {
		c := connect(t, e.Servers(), 4*time.Second)
		create(t, c, "/survives-kill", "v1")
		old := e.Leader()
		old.Kill()
		if old.Running() {
			t.Fatal("Running() after Kill")
		}
		waitReady(t, e) // the other two elect a leader
		if l := e.Leader(); l == nil || l == old {
			t.Fatalf("leader after kill = %v", l)
		}
		if err := old.Start(); err != nil {
			t.Fatal(err)
		}
		waitReady(t, e)
		if got := old.Mode(); got != "follower" {
			t.Fatalf("restarted old leader is %q, want follower", got)
		}
		readBack(t, []string{old.Addr()}, "/survives-kill", "v1")
	})

	t.Run("StopAll and StartAll keep data", func(t *testing.T) {
		writeAndStop(t, e, "/survives-outage", "v2", e.StopAll, e.Members()...)
		if e.Leader() != nil {
			t.Fatal("a leader during the outage")
		}
		if err := e.StartAll(); err != nil {
			t.Fatal(err)
		}
		if e.Leader() == nil {
			t.Fatal("no leader after StartAll")
		}
		readBack(t, e.Servers(), "/survives-outage", "v2")
	})
}

func TestCloseIsIdempotentAndStopsServers(t *testing.T) {
	Require(t)
	t.Parallel()
	e, err := StartEnsemble(Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := e.Member(1)
	e.Close()
	e.Close()
	if m.Running() {
		t.Fatal("server still running after Close")
	}
	if err := m.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	if err := e.WaitReady(context.Background()); err == nil {
		t.Fatal("WaitReady after Close succeeded")
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{{Servers: -1}, {TickTime: 1500 * time.Microsecond}, {SyncLimit: -2}} {
		if _, err := StartEnsemble(o); err == nil {
			t.Errorf("StartEnsemble(%+v) succeeded, want an error", o)
		}
	}
}

func TestPortCollisionIsDetected(t *testing.T) {
	Require(t)
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	opts, _ := Options{}.withDefaults()
	cp, err := Classpath()
	if err != nil {
		t.Fatal(err)
	}
	java, _ := JavaPath()
	e, err := newEnsemble(opts, java, cp)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := e.Member(1)
	m.client.release()
	m.client = &reservedPort{port: busy.Addr().(*net.TCPAddr).Port, fd: -1, released: true}
	if err := e.writeConfig(m); err != nil {
		t.Fatal(err)
	}
	err = e.startAndWait()
	if !errors.Is(err, errPortCollision) {
		t.Fatalf("start on a busy port: %v, want %v", err, errPortCollision)
	}
}
