package proxy

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// connLimit caps the proxy's open connections on one port
// (Config.MaxConnections for clients, MaxPeerConnections for peers)
// without ever blocking Accept. At the cap, in HTTP mode, a newcomer
// evicts the connection that has waited longest outside a request (idle
// between requests, or still to send its headers), as the API server
// does; else the HTTP/1 connection whose body the proxy buffers and
// receives slowest (the fewest bytes a second), which is closed;
// when none is, and always in TCP mode, the newcomer is closed at once. A
// flood of idle or dribbling connections therefore cannot lock clients
// out, and nothing waits in the kernel's backlog for a slot. A request
// already on its way to the leader is never evicted. It is not the HTTP
// API's limiter (internal/httpserver), whose policy differs on purpose:
// that one may evict a connection whose handler runs, which here would cut
// a request on its way to the leader; here TCP mode refuses rather than
// evicts, and hijacked connections carry a guard.
type connLimit struct {
	max   int
	evict bool // HTTP mode: idle connections may be evicted
	rec   Recorder
	clock func() int64 // unix nanoseconds, for the receiving rate
	// framing, when above 0, checks each connection's HTTP/1 framing
	// (framing.go), a faulty head taking at most this many bytes.
	framing int

	mu     sync.Mutex
	open   int
	idle   connList // evictable, longest waiting first
	all    map[*trackedConn]struct{}
	closed bool
}

func newConnLimit(max int, evict bool, rec Recorder, now func() int64) *connLimit {
	return &connLimit{max: max, evict: evict, rec: rec, clock: now, all: map[*trackedConn]struct{}{}}
}

// limited is a listener whose connections count against a connLimit; the
// client and peer listeners of TCP mode share one.
type limited struct {
	net.Listener
	l *connLimit
}

// listener wraps ln so that its connections count against l.
func (l *connLimit) listener(ln net.Listener) net.Listener { return &limited{Listener: ln, l: l} }

// trackedConn is one accepted connection, counted until closed. Once it
// carries an upgraded (hijacked) HTTP connection, its guard bounds how long
// it may stay idle or block a write.
type trackedConn struct {
	net.Conn
	l *connLimit
	// prev and next link it in l.idle while it is evictable (idle):
	// a connection goes in and out of the list at every request, which
	// must cost no allocation.
	prev, next *trackedConn
	idle       bool
	closed     bool // under l.mu
	g          atomic.Pointer[guard]
	// recvStart is when the proxy began to buffer a body from it (unix
	// nanoseconds; 0: not receiving), recvBytes what it read since:
	// under l.mu, but for recvBytes, which the reader adds to.
	recvStart int64
	recvBytes atomic.Int64
	evicted   atomic.Bool
	f         framer // HTTP mode: its requests' framing
}

// Accept returns the next connection within the cap.
func (ll *limited) Accept() (net.Conn, error) {
	l := ll.l
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.framing > 0 {
			c = newRawTCP(c) // HTTP mode (rawio.go); TCP mode keeps splice
		}
		tc := &trackedConn{Conn: c, l: l}
		tc.f.on, tc.f.maxHead = l.framing > 0, l.framing
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = c.Close()
			return nil, net.ErrClosed
		}
		var victim, slow *trackedConn
		if l.open >= l.max {
			victim = l.victimLocked()
			if victim == nil {
				slow = l.slowestLocked()
			}
			if victim == nil && slow == nil {
				l.mu.Unlock()
				_ = c.Close()
				l.rec.Conn(ResultRefused)
				continue
			}
		}
		l.open++
		l.all[tc] = struct{}{}
		if l.evict {
			l.idle.pushBack(tc) // waiting for its request's headers
		}
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close()
			l.rec.Conn(ResultEvicted)
		}
		if slow != nil {
			// Closed at once, so that its descriptor goes now: its handler
			// finds its body cut and counts it evicted (buffer.go).
			slow.evicted.Store(true)
			_ = slow.Close()
		}
		return tc, nil
	}
}

// victimLocked unlinks and returns the connection waiting longest, or nil.
func (l *connLimit) victimLocked() *trackedConn {
	c := l.idle.head
	if c != nil {
		l.idle.remove(c)
	}
	return c
}

// slowestLocked picks, among the connections whose body is being
// buffered, the one that sent the fewest bytes a second, and takes it off
// the receiving ones; nil when none is receiving.
func (l *connLimit) slowestLocked() *trackedConn {
	now := l.clock()
	var slow *trackedConn
	var sb, se int64 // its bytes and elapsed time
	for c := range l.all {
		if c.recvStart == 0 {
			continue
		}
		b, e := c.recvBytes.Load(), max(now-c.recvStart, 1)
		if slow == nil || b*se < sb*e { // b/e < sb/se
			slow, sb, se = c, b, e
		}
	}
	if slow != nil {
		slow.recvStart = 0
	}
	return slow
}

// receiving marks c as receiving a buffered body (on) or done with it.
func (l *connLimit) receiving(c *trackedConn, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.recvStart = 0
	if on && !c.closed && !c.evicted.Load() {
		c.recvBytes.Store(0)
		c.recvStart = l.clock()
	}
}

// Open is the number of open connections.
func (l *connLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// connState is http.Server.ConnState: a connection is evictable while it
// waits for a request, and guarded once hijacked by an upgrade.
func (l *connLimit) connState(g func(*trackedConn) *guard) func(net.Conn, http.ConnState) {
	return func(c net.Conn, s http.ConnState) {
		tc := trackedOf(c)
		if tc == nil {
			return
		}
		l.mu.Lock()
		if !tc.closed {
			l.idle.remove(tc)
			if l.evict && (s == http.StateNew || s == http.StateIdle) {
				l.idle.pushBack(tc)
			}
		}
		l.mu.Unlock()
		if s == http.StateHijacked {
			tc.g.Store(g(tc))
		}
	}
}

type connKey struct{}

// connContext is http.Server.ConnContext: a request's handler finds its
// connection (connOf).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc := trackedOf(c); tc != nil {
		return context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}

// connOf is the HTTP/1 connection r came on; nil for HTTP/2, whose
// connection carries other requests too.
func connOf(r *http.Request) *trackedConn {
	if r.ProtoMajor != 1 {
		return nil
	}
	tc, _ := r.Context().Value(connKey{}).(*trackedConn)
	return tc
}

// closeAll closes every connection and refuses new ones: the end of Serve.
func (l *connLimit) closeAll() {
	l.mu.Lock()
	l.closed = true
	cs := make([]*trackedConn, 0, len(l.all))
	for c := range l.all {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

func (c *trackedConn) Read(b []byte) (int, error) {
	g := c.g.Load()
	if g == nil && c.f.on {
		return c.f.read(c.Conn, b)
	}
	n, err := c.Conn.Read(b)
	if g != nil && n > 0 {
		g.touch()
	}
	return n, err
}

func (c *trackedConn) Write(b []byte) (int, error) {
	g := c.g.Load()
	if g == nil {
		return c.Conn.Write(b)
	}
	g.progress(0)
	defer g.done(0)
	return c.Conn.Write(b)
}

func (c *trackedConn) Close() error {
	l := c.l
	l.mu.Lock()
	if !c.closed {
		c.closed = true
		l.open--
		delete(l.all, c)
		l.idle.remove(c)
	}
	l.mu.Unlock()
	if g := c.g.Load(); g != nil {
		g.stop()
	}
	return c.Conn.Close()
}

// connList is a list of connections linked through their prev and next,
// in the order they were pushed.
type connList struct{ head, tail *trackedConn }

func (l *connList) pushBack(c *trackedConn) {
	if c.idle {
		return
	}
	c.idle, c.prev, c.next = true, l.tail, nil
	if l.tail != nil {
		l.tail.next = c
	} else {
		l.head = c
	}
	l.tail = c
}

// remove takes c out, if it is in.
func (l *connList) remove(c *trackedConn) {
	if !c.idle {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.idle, c.prev, c.next = false, nil, nil
}
