package main

import (
	"container/list"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
)

// connLimit caps the open HTTP connections without ever blocking Accept.
//
// A plain limit (netutil.LimitListener) stops accepting at the cap, so the
// kubelet's probes would queue behind whoever holds the connections. Here a
// newcomer at the cap is always accepted and makes room: it evicts (closes)
// the connection that has waited longest outside a handler (still sending
// its request headers, or idle between requests), else the one whose
// handler has run longest among those not held. Held requests (/events
// streams, waiting long polls, /participants reads) are never evicted: they
// are bounded by their own caps, which serverOptions.validate keeps below
// max_connections. So a probe always gets in, and slowloris or idle
// connections are what it pushes out.
//
// Each connection is in one state: waiting (outside a handler), busy (in a
// handler), or held. The waiting and busy ones sit in a list each, oldest
// first, so the victim is found in constant time.
type connLimit struct {
	net.Listener
	max     int
	evicted func() // counts an eviction (a metric)

	mu      sync.Mutex
	open    int
	waiting list.List // of *trackedConn
	busy    list.List // of *trackedConn
}

type connState int8

const (
	stateWaiting connState = iota
	stateBusy
	stateHeld
)

// trackedConn is one accepted connection, known to its connLimit until closed.
type trackedConn struct {
	net.Conn
	l      *connLimit
	state  connState
	elem   *list.Element // in l.waiting or l.busy; nil when held or closed
	closed bool
}

func newConnLimit(ln net.Listener, max int, evicted func()) *connLimit {
	return &connLimit{Listener: ln, max: max, evicted: evicted}
}

// Accept accepts the next connection, evicting one first at the cap.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	victim := l.victimLocked()
	tc.elem = l.waiting.PushBack(tc)
	l.open++
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Conn.Close()
		l.evicted()
	}
	return tc, nil
}

// victimLocked unlinks and returns the connection to evict, or nil below
// the cap. With every open connection held (impossible while the caps of
// held requests stay below max) it returns nil and the cap is exceeded by
// the newcomer rather than a probe being turned away.
func (l *connLimit) victimLocked() *trackedConn {
	if l.open < l.max {
		return nil
	}
	for _, q := range []*list.List{&l.waiting, &l.busy} {
		if e := q.Front(); e != nil {
			v := e.Value.(*trackedConn)
			l.forgetLocked(v)
			return v
		}
	}
	return nil
}

// forgetLocked removes c from the count for good.
func (l *connLimit) forgetLocked(c *trackedConn) {
	if c.closed {
		return
	}
	c.closed = true
	l.open--
	l.unlinkLocked(c)
}

func (l *connLimit) unlinkLocked(c *trackedConn) {
	if c.elem == nil {
		return
	}
	if c.state == stateBusy {
		l.busy.Remove(c.elem)
	} else {
		l.waiting.Remove(c.elem)
	}
	c.elem = nil
}

// set moves c to state s, as the youngest of its list.
func (l *connLimit) set(c *trackedConn, s connState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return
	}
	l.unlinkLocked(c)
	c.state = s
	switch s {
	case stateWaiting:
		c.elem = l.waiting.PushBack(c)
	case stateBusy:
		c.elem = l.busy.PushBack(c)
	}
}

// Open is the number of open connections.
func (l *connLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	c.l.forgetLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

type connKey struct{}

// connContext is http.Server.ConnContext: it puts the trackedConn of a
// connection (under TLS, of its *tls.Conn) in the context of its requests.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if tc, ok := c.(*trackedConn); ok {
		ctx = context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}

func connOf(r *http.Request) *trackedConn {
	tc, _ := r.Context().Value(connKey{}).(*trackedConn)
	return tc
}

// track marks a connection busy while a handler runs on it. It wraps the
// whole API (HTTP/1.1: one handler at a time per connection).
func (l *connLimit) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tc := connOf(r); tc != nil {
			l.set(tc, stateBusy)
			defer l.set(tc, stateWaiting)
		}
		next.ServeHTTP(w, r)
	})
}

// held is httpapi.Options.Held: the request's connection is held (never
// evicted) until the returned function is called.
func (l *connLimit) held(r *http.Request) func() {
	tc := connOf(r)
	if tc == nil {
		return func() {}
	}
	l.set(tc, stateHeld)
	return func() { l.set(tc, stateBusy) }
}
