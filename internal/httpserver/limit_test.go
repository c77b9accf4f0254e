package httpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// limitPair is a connLimit on a real listener and the client ends of the
// connections it accepted, by name.
type limitPair struct {
	t       *testing.T
	l       *connLimit
	evicted int
	clients map[string]net.Conn
	servers map[string]*trackedConn
}

func newLimitPair(t *testing.T, max int) *limitPair {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &limitPair{t: t, clients: map[string]net.Conn{}, servers: map[string]*trackedConn{}}
	p.l = newConnLimit(ln, max, func() { p.evicted++ })
	t.Cleanup(func() {
		ln.Close()
		for _, c := range p.clients {
			c.Close()
		}
	})
	return p
}

// dial connects a client named name from 127.0.0.1 and accepts it.
func (p *limitPair) dial(name string) *trackedConn { return p.dialFrom(name, "127.0.0.1") }

// dialFrom connects a client named name from ip (any of 127/8 on Linux).
func (p *limitPair) dialFrom(name, ip string) *trackedConn {
	p.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", p.l.Addr().String())
	if err != nil {
		p.t.Fatal(err)
	}
	s, err := p.l.Accept()
	if err != nil {
		p.t.Fatal(err)
	}
	p.clients[name] = c
	p.servers[name] = s.(*trackedConn)
	return p.servers[name]
}

// closedByServer reports whether the server closed name's connection: EOF
// within wait. Only an open connection waits that long, so a short wait
// can make the check miss a close, never see one that did not happen.
func (p *limitPair) closedByServer(name string, wait time.Duration) bool {
	p.t.Helper()
	c := p.clients[name]
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	switch {
	case err == io.EOF:
		return true
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false
	}
	p.t.Fatalf("%s: read: %v", name, err)
	return false
}

func (p *limitPair) expectClosed(want ...string) {
	p.t.Helper()
	closed := map[string]bool{}
	for _, n := range want {
		closed[n] = true
	}
	for name := range p.clients {
		wait := 50 * time.Millisecond
		if closed[name] {
			wait = 10 * time.Second
		}
		if got := p.closedByServer(name, wait); got != closed[name] {
			p.t.Errorf("%s closed by the server: %v, want %v", name, got, closed[name])
		}
	}
}

func TestConnLimitEvictsTheLongestWaitingFirst(t *testing.T) {
	p := newLimitPair(t, 3)
	a, b, c := p.dial("a"), p.dial("b"), p.dial("c")
	p.l.set(b, stateBusy) // in a handler
	p.l.set(a, stateBusy)
	p.l.set(a, stateWaiting) // a's request ended after c arrived: c waited longer
	if got := p.l.Open(); got != 3 {
		t.Fatalf("Open = %d, want 3", got)
	}
	p.dial("d")
	p.expectClosed("c")
	if got := p.l.Open(); got != 3 || p.evicted != 1 {
		t.Errorf("Open = %d, evicted %d; want 3 and 1", got, p.evicted)
	}
	_ = c
}

// The address that holds the most connections loses one, even when
// another's connection has waited longer: the kubelet, probing from the
// node's address, is not the one a flood from elsewhere pushes out.
func TestConnLimitEvictsFromTheBusiestAddress(t *testing.T) {
	p := newLimitPair(t, 4)
	p.dialFrom("kubelet", "127.0.0.1") // waits longest
	p.dialFrom("flood-1", "127.0.0.2")
	p.dialFrom("flood-2", "127.0.0.2")
	p.dialFrom("app", "127.0.0.3")
	p.dialFrom("flood-3", "127.0.0.2")
	p.expectClosed("flood-1")
	p.dialFrom("flood-4", "127.0.0.2")
	p.expectClosed("flood-1", "flood-2")
	p.dialFrom("prometheus", "127.0.0.4") // 127.0.0.2 still holds two
	p.expectClosed("flood-1", "flood-2", "flood-3")
	// Now every address holds one: the longest waiting goes.
	p.dialFrom("late", "127.0.0.5")
	p.expectClosed("flood-1", "flood-2", "flood-3", "kubelet")
}

// requestOn is a request served on c, as connContext makes it.
func requestOn(c *trackedConn) *http.Request {
	return httptest.NewRequest(http.MethodGet, "/", nil).WithContext(connContext(context.Background(), c))
}

func TestConnLimitEvictsTheLongestBusyWhenNoneWaits(t *testing.T) {
	p := newLimitPair(t, 3)
	a, b, c := p.dial("a"), p.dial("b"), p.dial("c")
	p.l.set(b, stateBusy) // the longest in a handler
	p.l.set(a, stateBusy)
	p.l.set(c, stateBusy)
	Held(requestOn(a))
	p.dial("d")
	p.expectClosed("b")
}

func TestConnLimitNeverEvictsHeld(t *testing.T) {
	p := newLimitPair(t, 2)
	a, b := p.dial("a"), p.dial("b")
	endA := Held(requestOn(a))
	Held(requestOn(b))
	// Every connection is held (the caps forbid it; validate keeps room):
	// the newcomer is admitted over the cap, nobody is evicted.
	p.dial("c")
	p.expectClosed()
	if got := p.l.Open(); got != 3 {
		t.Errorf("Open = %d, want 3", got)
	}
	// A held request that ends leaves its connection evictable again.
	endA()
	p.l.set(a, stateWaiting)
	p.servers["c"].Close() // 2 open: a waiting, b held
	p.dial("d")            // at the cap: a is the one to go
	p.expectClosed("a", "c")
}

func TestConnLimitCountsEachCloseOnce(t *testing.T) {
	p := newLimitPair(t, 2)
	a := p.dial("a")
	p.dial("b")
	p.dial("c") // evicts a
	a.Close()
	a.Close()
	if got := p.l.Open(); got != 2 {
		t.Errorf("Open = %d after closing an evicted connection twice, want 2", got)
	}
	// State changes on a closed connection do not bring it back.
	p.l.set(a, stateWaiting)
	p.dial("d") // evicts b, the longest waiting, not a
	p.expectClosed("a", "b")
	if got := p.l.Open(); got != 2 {
		t.Errorf("Open = %d, want 2", got)
	}
}
