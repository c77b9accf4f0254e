package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

// The pool of connections to the other participants' proxies
// (docs/design/proxy.md, "Forwarding": two ports). HTTP/2 over mutual TLS
// (peertls.go, ALPN h2): one connection carries up to PeerStreams forwards at once,
// so a follower's forwards hold streams, not connections, at the leader,
// and the leader's PeerStreams cap on each connection is the share every
// peer is sure of, which clients of one proxy cannot take from another's.
// At most maxConnsPerPeer connections per peer, kept alive and pinged:
// one that carried no frame for PeerTimeout/2 is pinged and closed when no
// answer comes within another PeerTimeout/2, which ends its forwards; a
// new one is used only once it answered a ping (a stopped process's kernel
// still completes the TCP handshake: a connect proves nothing).

// peerIdle closes a connection to a peer's proxy that carried no forward
// this long (or idle_timeout/2, when shorter: before the peer closes it).
// An idle one is pinged every PeerTimeout/2 at both ends, and holds
// buffers and goroutines there; a new one costs a dial and a ping, a
// fraction of a millisecond.
const peerIdle = 30 * time.Second

// errPeerBusy: every connection to the peer's proxy is at its stream cap.
var errPeerBusy = errors.New("proxy: every connection to the leader's proxy is at its stream cap")

// noConnError: no connection to the target was had; nothing was sent.
type noConnError struct{ err error }

func (e *noConnError) Error() string { return e.err.Error() }
func (e *noConnError) Unwrap() error { return e.err }

// unwrittenError: the connection took nothing of the request (HTTP/2's
// REFUSED_STREAM, a GOAWAY that names an earlier stream, a connection
// that turned out unusable before the request went out).
type unwrittenError struct{ err error }

func (e *unwrittenError) Error() string { return e.err.Error() }
func (e *unwrittenError) Unwrap() error { return e.err }

func newPeerPool(p *Proxy) *peerPool {
	cfg := p.cfg
	// x/net's Transport takes its receive windows from a net/http one's
	// HTTP2 only (peerWindows).
	t, _ := http2.ConfigureTransports(&http.Transport{HTTP2: peerWindows(cfg, cfg.PeerStreams)})
	t.AllowHTTP = true
	t.DisableCompression = true // relay the bytes as they are
	t.ReadIdleTimeout = cfg.PeerTimeout / 2
	t.PingTimeout = cfg.PeerTimeout / 2
	t.IdleConnTimeout = min(cfg.IdleTimeout/2, peerIdle)
	t.MaxHeaderListSize = MaxHeaderBytes
	return &peerPool{p: p, peers: map[string]*peerConns{}, t: t}
}

// roundTripPeer sends req on cc, a connection to the peer's proxy with a
// stream reserved (get); its errors say whether nothing was sent
// (unwrittenError).
func roundTripPeer(cc *http2.ClientConn, req *http.Request) (*http.Response, error) {
	res, err := cc.RoundTrip(req)
	if err != nil && unwrittenH2(err) {
		err = &unwrittenError{err}
	}
	return res, err
}

// unwrittenH2 reports an HTTP/2 error that proves the request was not
// processed (RFC 9113, 8.7): the stream refused, or a GOAWAY that names an
// earlier stream as the last one processed, or a connection that could not
// take the request. x/net/http2 exports no value for the last two.
func unwrittenH2(err error) bool {
	var se http2.StreamError
	if errors.As(err, &se) {
		return se.Code == http2.ErrCodeRefusedStream
	}
	switch err.Error() {
	case "http2: Transport received Server's graceful shutdown GOAWAY", "http2: client conn not usable":
		return true
	}
	return false
}

// get returns a connection to addr with a stream reserved, dialling one
// (at most one dial per peer at a time, shared) when none has room.
func (pp *peerPool) get(ctx context.Context, addr string) (*http2.ClientConn, error) {
	for {
		pp.mu.Lock()
		if pp.closed {
			pp.mu.Unlock()
			return nil, errShutdown
		}
		pc := pp.peers[addr]
		if pc == nil {
			pc = &peerConns{}
			pp.peers[addr] = pc
		}
		pc.prune()
		for _, cc := range pc.conns {
			if cc.ReserveNewRequest() {
				pp.mu.Unlock()
				return cc, nil
			}
		}
		d := pc.dial
		if d == nil {
			if len(pc.conns) >= maxConnsPerPeer {
				pp.mu.Unlock()
				return nil, errPeerBusy
			}
			d = &peerDial{done: make(chan struct{})}
			pc.dial = d
			pp.dials.Go(func() { pp.dial(addr, pc, d) })
		}
		pp.mu.Unlock()
		select {
		case <-d.done:
			if d.err != nil {
				return nil, d.err
			}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// prune forgets connections closed or going away: they finish their
// streams and close on their own.
func (pc *peerConns) prune() {
	kept := pc.conns[:0]
	for _, cc := range pc.conns {
		if st := cc.State(); !st.Closed && !st.Closing {
			kept = append(kept, cc)
		}
	}
	clear(pc.conns[len(kept):])
	pc.conns = kept
}

func (pp *peerPool) dial(addr string, pc *peerConns, d *peerDial) {
	cc, err := pp.connect(addr)
	pp.mu.Lock()
	pc.dial = nil
	switch {
	case err == nil && pp.closed:
		_ = cc.Close()
		err = errShutdown
	case err == nil:
		pc.conns = append(pc.conns, cc)
	}
	d.err = err
	pp.mu.Unlock()
	close(d.done)
}

// connect dials addr, authenticates it (TLS), opens HTTP/2 on it and has
// a ping answered within PeerTimeout before anything is sent on it.
func (pp *peerPool) connect(addr string) (*http2.ClientConn, error) {
	p := pp.p
	c, err := p.dialPeer(p.stopping, addr, alpnH2)
	if err != nil {
		return nil, err
	}
	cc, err := pp.t.NewClientConn(c)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := pp.ping(cc); err != nil {
		_ = cc.Close()
		return nil, fmt.Errorf("the proxy at %s did not answer a ping within %v: %w", addr, p.cfg.PeerTimeout, err)
	}
	return cc, nil
}

// ping has cc answer a ping within PeerTimeout.
func (pp *peerPool) ping(cc *http2.ClientConn) error {
	p := pp.p
	ctx, cancel := context.WithCancel(p.stopping)
	defer cancel()
	t := p.clock.AfterFunc(p.cfg.PeerTimeout, cancel)
	defer t.Stop()
	return cc.Ping(ctx)
}

// Open counts the connections open to peers' proxies.
func (pp *peerPool) Open() int {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	n := 0
	for _, pc := range pp.peers {
		pc.prune()
		n += len(pc.conns)
	}
	return n
}

// closeIdle closes the connections to peers' proxies that carry nothing:
// those to a leader that is gone.
func (pp *peerPool) closeIdle() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for addr, pc := range pp.peers {
		kept := pc.conns[:0]
		for _, cc := range pc.conns {
			if st := cc.State(); st.StreamsActive == 0 && st.StreamsReserved == 0 && st.StreamsPending == 0 {
				_ = cc.Close()
				continue
			}
			kept = append(kept, cc)
		}
		clear(pc.conns[len(kept):])
		pc.conns = kept
		if len(kept) == 0 && pc.dial == nil {
			delete(pp.peers, addr)
		}
	}
}

// close closes every connection and takes no more: the end of Serve.
func (pp *peerPool) close() {
	pp.mu.Lock()
	pp.closed = true
	var all []*http2.ClientConn
	for addr, pc := range pp.peers {
		all = append(all, pc.conns...)
		delete(pp.peers, addr)
	}
	pp.mu.Unlock()
	for _, cc := range all {
		_ = cc.Close()
	}
	pp.dials.Wait()
}

// dialPeer connects to a peer's proxy at addr and completes the TLS
// handshake, offering proto, within DialTimeout each.
func (p *Proxy) dialPeer(ctx context.Context, addr, proto string) (net.Conn, error) {
	d := net.Dialer{Timeout: p.cfg.DialTimeout, KeepAlive: 15 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// Raw reads and writes (rawio.go), as the peer port accepts them.
	tc, err := p.handshakePeer(ctx, newRawTCP(c), proto)
	if err != nil {
		return nil, err
	}
	return tc, nil
}

// handshakePeer runs the client's handshake on c within DialTimeout.
func (p *Proxy) handshakePeer(ctx context.Context, c net.Conn, proto string) (*tls.Conn, error) {
	tc := tls.Client(c, p.peerTLS.config(proto))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := p.clock.AfterFunc(p.cfg.DialTimeout, func() {
		cancel(fmt.Errorf("no answer within %v", p.cfg.DialTimeout))
	})
	defer t.Stop()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return nil, fmt.Errorf("TLS handshake with the proxy at %s: %w", remoteAddr(c), err)
	}
	return tc, nil
}

func remoteAddr(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return "?"
}
