package zktest

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// ruokThrough sends ruok through the proxy and returns a channel with the answer.
func ruokThrough(t *testing.T, p *Proxy) <-chan string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("ruok")); err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, _ := io.ReadAll(conn)
		out <- string(b)
	}()
	return out
}

// healWorks heals p and checks that c gets its session back and reads through p.
func healWorks(t *testing.T, p *Proxy, c *client) {
	t.Helper()
	p.Heal()
	c.waitSession(t)
	if _, _, err := c.Get("/"); err != nil {
		t.Fatalf("get after Heal: %v", err)
	}
}

func (c *client) waitDisconnected(t *testing.T) {
	t.Helper()
	wait.For(t, 5*time.Second, "the client to see Disconnected", func() bool { return c.count(zk.StateDisconnected) > 0 })
}

func TestProxy(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{RunStaleRequests: true}) // "drop after create" needs the create run
	server := e.Member(1).Addr()

	t.Run("forwards a client", func(t *testing.T) {
		t.Parallel()
		p := newProxy(t, server)
		if p.Target() != server {
			t.Fatalf("Target() = %q", p.Target())
		}
		c := connect(t, []string{p.Addr()}, 4*time.Second)
		create(t, c, "/through-proxy", "hello")
		if got := get(t, c, "/through-proxy"); got != "hello" {
			t.Fatalf("get = %q", got)
		}
		if n := p.Conns(); n != 1 {
			t.Fatalf("Conns() = %d, want 1", n)
		}
		if creates, requests := p.Counts(); creates != 1 || requests < 2 {
			t.Fatalf("Counts() = %d creates, %d requests; want 1 and >= 2", creates, requests)
		}
		c.Close()
		wait.For(t, 5*time.Second, "Conns() to drop to 0", func() bool { return p.Conns() == 0 })
	})

	t.Run("blackhole holds bytes until heal", func(t *testing.T) {
		t.Parallel()
		p := newProxy(t, server)
		p.Blackhole()
		answer := ruokThrough(t, p)
		wait.For(t, 5*time.Second, "the held connection to count", func() bool { return p.Conns() == 1 })
		never(t, 300*time.Millisecond, "a blackholed connection was answered", func() bool { return len(answer) > 0 })
		p.Heal()
		select {
		case got := <-answer:
			if got != "imok" {
				t.Fatalf("answer after Heal = %q, want imok", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer after Heal")
		}
	})

	t.Run("blackhole starves a client until heal", func(t *testing.T) {
		t.Parallel()
		p := newProxy(t, server)
		const timeout = 3 * time.Second // the client's read timeout is 2/3 of it
		c := connect(t, []string{p.Addr()}, timeout)
		p.Blackhole()
		start := time.Now()
		_, _, err := c.Get("/")
		if !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("get through a blackhole: %v, want %v", err, zk.ErrConnectionClosed)
		}
		if d := time.Since(start); d < timeout/3 {
			t.Fatalf("the client gave up after %v, before its read timeout", d)
		}
		c.waitDisconnected(t)
		if c.State() == zk.StateHasSession {
			t.Fatal("client has a session through a blackhole")
		}
		healWorks(t, p, c)
	})

	t.Run("reset makes the client reconnect", func(t *testing.T) {
		t.Parallel()
		p := newProxy(t, server)
		c := connect(t, []string{p.Addr()}, 4*time.Second)
		sid := c.SessionID()
		p.Reset()
		c.waitDisconnected(t)
		wait.For(t, 10*time.Second, "a new session event", func() bool { return c.count(zk.StateHasSession) >= 2 })
		if c.SessionID() != sid {
			t.Fatalf("session %#x after Reset, want the same %#x", c.SessionID(), sid)
		}
		if _, _, err := c.Get("/"); err != nil {
			t.Fatalf("get after Reset: %v", err)
		}
	})

	t.Run("delay holds what the server sends", func(t *testing.T) {
		t.Parallel()
		p := newProxy(t, server)
		const d = 300 * time.Millisecond
		p.Delay(d)
		sent := time.Now()
		if got := <-ruokThrough(t, p); got != "imok" {
			t.Fatalf("answer through a delay = %q, want imok", got)
		}
		if took := time.Since(sent); took < d {
			t.Fatalf("answered in %v through a delay of %v", took, d)
		}
		// A client's requests and replies keep their order, and its
		// round-trips take the delay.
		c := connect(t, []string{p.Addr()}, 4*time.Second)
		for i, v := range []string{"a", "b", "c"} {
			start := time.Now()
			if i == 0 {
				create(t, c, "/delayed", v)
			} else if _, err := c.Set("/delayed", []byte(v), -1); err != nil {
				t.Fatalf("set %s: %v", v, err)
			}
			if got := get(t, c, "/delayed"); got != v {
				t.Fatalf("get after writing %q = %q", v, got)
			}
			if took := time.Since(start); took < 2*d {
				t.Fatalf("two round-trips in %v through a delay of %v", took, d)
			}
		}
		p.Delay(0)
		if got := <-ruokThrough(t, p); got != "imok" {
			t.Fatalf("answer after Delay(0) = %q, want imok", got)
		}
	})

	t.Run("refuse keeps the client out until heal", func(t *testing.T) {
		t.Parallel()
		p := newProxy(t, server)
		c := connect(t, []string{p.Addr()}, 4*time.Second)
		p.Refuse()
		c.waitDisconnected(t)
		if got, err := fourLetter(p.Addr(), "ruok"); err == nil {
			t.Fatalf("a connection through a refusing proxy answered %q", got)
		}
		// The aborted connection leaves the proxy's set when its goroutines
		// end, which can be just after the client saw the disconnect.
		wait.For(t, 5*time.Second, "the aborted connection to leave the proxy", func() bool { return p.Conns() == 0 })
		never(t, 1500*time.Millisecond, "the client got a connection or a session through Refuse", func() bool {
			return p.Conns() != 0 || c.State() == zk.StateHasSession
		})
		healWorks(t, p, c)
	})

	t.Run("drop after create", func(t *testing.T) {
		t.Parallel()
		p := newProxy(t, server)
		direct := connect(t, []string{server}, 4*time.Second)
		c := connect(t, []string{p.Addr()}, 10*time.Second)
		if _, err := c.Create("/before-drop", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		p.DropAfterCreate()
		_, err := c.Create("/dropped", []byte("x"), 0, zk.WorldACL(zk.PermAll))
		if !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("create through DropAfterCreate: %v, want %v", err, zk.ErrConnectionClosed)
		}
		wait.For(t, 5*time.Second, "/dropped to exist on the server", func() bool {
			ok, _, err := direct.Exists("/dropped")
			return err == nil && ok
		})
		if creates, _ := p.Counts(); creates != 2 {
			t.Fatalf("Counts() creates = %d, want 2", creates)
		}
		// One shot: the client reconnects and its next create goes through.
		c.waitSession(t)
		if _, err := c.Create("/after-drop", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create after the drop: %v", err)
		}
	})
}
