package httpserver

import (
	"container/list"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"sync"
)

// connLimit caps the open HTTP connections without ever blocking Accept.
//
// A plain limit (netutil.LimitListener) stops accepting at the cap, so the
// kubelet's probes would queue behind whoever holds the connections. Here a
// newcomer at the cap is always accepted and makes room: it evicts (closes)
// one connection of the client address that holds the most evictable ones,
// the one that has waited longest outside a handler (still sending its
// request headers, or idle between requests), else the one whose handler
// has run longest. Held requests (/events streams, waiting long polls,
// /participants reads) are never evicted: they are bounded by their own
// caps, which internal/config keeps below http.max_connections.
//
// So a flood pays for itself: the kubelet probes from the node's address
// with one connection at a time, Prometheus and the app from theirs, and
// whoever opens hundreds of connections is the one whose connections go.
// Even from one address, a newcomer pushes out the connection that waited
// longest, so a probe, which sends its request at once, is lost only if
// max_connections newer connections arrive before it is read.
type connLimit struct {
	net.Listener
	max     int
	evicted func() // counts an eviction (a metric)

	mu    sync.Mutex
	open  int
	seq   uint64 // orders state changes: lower is longer ago
	peers map[netip.Addr]*peer
}

// peer is the open connections of one client address.
type peer struct {
	addr    netip.Addr
	open    int       // held ones included
	waiting list.List // of *trackedConn, longest waiting first
	busy    list.List // of *trackedConn, longest busy first
}

func (p *peer) evictable() int { return p.waiting.Len() + p.busy.Len() }

// oldest is p's next victim, or nil.
func (p *peer) oldest() *trackedConn {
	for _, q := range []*list.List{&p.waiting, &p.busy} {
		if e := q.Front(); e != nil {
			return e.Value.(*trackedConn)
		}
	}
	return nil
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
	peer   *peer
	state  connState
	since  uint64        // l.seq when it entered state
	elem   *list.Element // in peer.waiting or peer.busy; nil when held or closed
	closed bool
}

func newConnLimit(ln net.Listener, max int, evicted func()) *connLimit {
	return &connLimit{Listener: ln, max: max, evicted: evicted, peers: map[netip.Addr]*peer{}}
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
	tc.peer = l.peerLocked(remoteAddr(c))
	tc.peer.open++
	l.open++
	l.linkLocked(tc, stateWaiting)
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Conn.Close()
		l.evicted()
	}
	return tc, nil
}

// remoteAddr is the client's address; the zero Addr groups the unknown.
func remoteAddr(c net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func (l *connLimit) peerLocked(a netip.Addr) *peer {
	p := l.peers[a]
	if p == nil {
		p = &peer{addr: a}
		l.peers[a] = p
	}
	return p
}

// victimLocked unlinks and returns the connection to evict, or nil below
// the cap: the oldest of the peer with the most evictable connections
// (ties: the peer whose oldest is oldest). With every open connection
// held (impossible while the caps of held requests stay below max) it
// returns nil, and the newcomer exceeds the cap rather than a probe being
// turned away.
func (l *connLimit) victimLocked() *trackedConn {
	if l.open < l.max {
		return nil
	}
	var victim *trackedConn
	most := 0
	for _, p := range l.peers {
		n, c := p.evictable(), p.oldest()
		if c != nil && (n > most || n == most && c.since < victim.since) {
			victim, most = c, n
		}
	}
	if victim != nil {
		l.forgetLocked(victim)
	}
	return victim
}

// forgetLocked removes c from the count for good.
func (l *connLimit) forgetLocked(c *trackedConn) {
	if c.closed {
		return
	}
	c.closed = true
	l.open--
	l.unlinkLocked(c)
	if c.peer.open--; c.peer.open == 0 {
		delete(l.peers, c.peer.addr)
	}
}

func (l *connLimit) unlinkLocked(c *trackedConn) {
	if c.elem == nil {
		return
	}
	if c.state == stateBusy {
		c.peer.busy.Remove(c.elem)
	} else {
		c.peer.waiting.Remove(c.elem)
	}
	c.elem = nil
}

// linkLocked puts c in state s, as the youngest of its list.
func (l *connLimit) linkLocked(c *trackedConn, s connState) {
	l.seq++
	c.state, c.since = s, l.seq
	switch s {
	case stateWaiting:
		c.elem = c.peer.waiting.PushBack(c)
	case stateBusy:
		c.elem = c.peer.busy.PushBack(c)
	}
}

// set moves c to state s.
func (l *connLimit) set(c *trackedConn, s connState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return
	}
	l.unlinkLocked(c)
	l.linkLocked(c, s)
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

// Held is httpapi.Options.Held: the request's connection is held (never
// evicted) until the returned function is called. A request that no
// Server of this package accepted holds nothing.
func Held(r *http.Request) func() {
	tc := connOf(r)
	if tc == nil {
		return func() {}
	}
	tc.l.set(tc, stateHeld)
	return func() { tc.l.set(tc, stateBusy) }
}
