package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/electd/electd/internal/clock"
)

// The preamble opens every connection a proxy forwards to a peer's
// PeerListen in TCP mode, inside the peers' TLS (peertls.go): magic, version, hop count, what is left of the
// hold time in milliseconds. A separate port, because a client's first
// bytes cannot be told from a preamble: many protocols (MySQL, SMTP) wait
// for the server to speak first, so a shared port would have to wait on
// every client to see whether it is a peer (docs/design/proxy.md, "Forwarding").
const preambleLen = 12

// The receiving proxy answers a preamble with one byte once it has placed
// the connection (dialled its application, or had the next peer's ack)
// and splices from then on, or refuses it: a connection forwarded twice
// to a participant that does not lead goes back to the proxy before,
// which routes it again. Until the ack, nothing of the client's stream
// has been read, so a connection refused anywhere on the way can be sent
// elsewhere whole.
const (
	ackPlaced  byte = 1
	ackRefused byte = 0
	// ackLen: the status, then the fencing token of the leadership that
	// took the connection (0 when refused), so that the proxies on the
	// way cut it when a newer leadership is known, whatever the leader
	// their own view names meanwhile.
	ackLen = 9
)

func ack(status byte, token int64) []byte {
	b := make([]byte, ackLen)
	b[0] = status
	binary.BigEndian.PutUint64(b[1:], uint64(token))
	return b
}

var preambleMagic = [6]byte{'E', 'L', 'E', 'C', 'T', 'D'}

const preambleVersion = 1

func preamble(hop int, hold time.Duration) []byte {
	b := make([]byte, preambleLen)
	copy(b, preambleMagic[:])
	b[6], b[7] = preambleVersion, byte(hop)
	binary.BigEndian.PutUint32(b[8:], uint32(min(hold.Milliseconds(), 1<<32-1)))
	return b
}

func parsePreamble(b []byte, hold time.Duration) (hop int, budget time.Duration, err error) {
	if len(b) != preambleLen || [6]byte(b[:6]) != preambleMagic || b[6] != preambleVersion {
		return 0, 0, errors.New("not an electd peer preamble (version 1)")
	}
	if b[7] < 1 || b[7] > maxHops {
		return 0, 0, fmt.Errorf("hop count %d is outside 1 to %d", b[7], maxHops)
	}
	ms := time.Duration(binary.BigEndian.Uint32(b[8:])) * time.Millisecond
	return int(b[7]), min(hold, ms), nil
}

// serve accepts on client and peer until ctx ends or a listener fails,
// then closes every connection: a spliced connection has no request
// boundary to drain at.
func (t *tcpProxy) serve(ctx context.Context, client, peer net.Listener) error {
	p := t.p
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var loops sync.WaitGroup
	for _, l := range []struct {
		ln     net.Listener
		handle func(*trackedConn)
	}{
		{client, func(c *trackedConn) { t.serveConn(c, 0, p.cfg.HoldTime) }},
		{peer, t.servePeer},
	} {
		loops.Go(func() {
			if err := t.accept(l.ln, l.handle); err != nil {
				cancel(err)
			}
		})
	}
	<-ctx.Done()
	p.shutdown()
	_ = client.Close()
	_ = peer.Close()
	loops.Wait()
	p.conns.closeAll()
	p.wg.Wait()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// accept serves ln until it is closed (nil) or fails for good. Errors
// that pass (too many open files) are retried after a pause that grows
// to a second, as net/http does.
func (t *tcpProxy) accept(ln net.Listener, handle func(*trackedConn)) error {
	p := t.p
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var tmp interface{ Temporary() bool }
			if !errors.As(err, &tmp) || !tmp.Temporary() {
				return fmt.Errorf("proxy: accept: %w", err)
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			p.log.Warn("accept failed; retrying", "err", err, "in", pause)
			wait, stop := clock.Deadline(p.clock, pause)
			select {
			case <-wait:
			case <-p.closed:
				stop()
				return nil
			}
			continue
		}
		pause = 0
		p.wg.Go(func() { handle(c.(*trackedConn)) })
	}
}

// servePeer reads a peer's preamble within HeaderTimeout (the TLS
// handshake included: the first read runs it), then serves the
// connection with the hop count and hold budget it carries.
func (t *tcpProxy) servePeer(c *trackedConn) {
	p := t.p
	timer := p.clock.AfterFunc(p.cfg.ClientHeaderTimeout, func() { _ = c.Close() })
	b := make([]byte, preambleLen)
	_, err := io.ReadFull(c, b)
	if !timer.Stop() {
		p.rec.Conn(ResultTimeout)
		return // closed by the timer
	}
	if err == nil {
		var hop int
		var budget time.Duration
		if hop, budget, err = parsePreamble(b, p.cfg.HoldTime); err == nil {
			t.serveConn(c, hop, budget)
			return
		}
	}
	_ = c.Close()
	p.log.Debug("peer connection refused", "remote", c.RemoteAddr().String(), "err", err)
	p.rec.Conn(ResultBadRequest)
}

// serveConn routes one connection: to the application while this
// participant leads, else to the leader's proxy, holding it meanwhile.
// Nothing is read from the client before the splice, so a connection is
// never half-sent anywhere: a dial that fails is simply retried. A peer's
// connection (hop > 0) is acknowledged once placed.
func (t *tcpProxy) serveConn(c *trackedConn, hop int, budget time.Duration) {
	p := t.p
	hd := newHolder(p, budget)
	res := ResultUpstreamError
	defer func() {
		hd.done()
		_ = c.Close()
		p.rec.Conn(res)
		p.served.Add(1)
	}()
	upstream := false // the last attempt failed
	var tk ticket     // the route's leave to dial, or to wait (probe.go)
	defer func() { tk.abandon() }()
	for {
		wake := p.wake.Changed()
		d := p.decide(hop, false)
		var retry time.Duration
		var ready <-chan struct{}
		switch d.way {
		case toNone:
			res = ResultShutdown
			return
		case toBounce:
			_, _ = c.Write(ack(ackRefused, 0))
			res = ResultBounced
			return
		case toApp, toLeader:
			// A route that failed is tried by its probe alone (probe.go).
			if tk = p.probe.acquire(keyOf(d), tk); !tk.ok {
				ready, retry, upstream = tk.changed, tk.after, upstream || tk.err != nil
				break
			}
			hd.leave()
			up, token, err := t.dial(d, hop, hd)
			tk.done(err == nil, err)
			tk = ticket{}
			if err == nil && hop > 0 {
				if _, err = c.Write(ack(ackPlaced, token)); err != nil {
					_ = up.Close()
					res = ResultCanceled
					return
				}
			}
			if err == nil {
				scope := d.scope // the leadership its application serves in
				if d.way == toLeader {
					scope = p.placedScope(token)
				}
				res = t.splice(c, up, scope)
				return
			}
			if d.way == toApp && errors.Is(err, syscall.ECONNREFUSED) {
				p.stepDown(d.route, StepDownRefused, err)
			}
			upstream = true
			continue // acquire waits for the route's probe
		}
		if !hd.enter() {
			res = ResultHeldCap
			return
		}
		switch err := hd.wait(context.Background(), wake, ready, retry); {
		case err == nil:
		case errors.Is(err, errHoldExpired):
			res = ResultNoLeader
			if upstream {
				res = ResultUpstreamError
			}
			return
		default:
			res = ResultShutdown
			return
		}
	}
}

// dial connects to the application or the leader's proxy (then sends the
// preamble and has the ack); the dial ends with the leadership it is for.
// token is the fencing token of the leadership that took the connection.
func (t *tcpProxy) dial(d decision, hop int, hd *holder) (up net.Conn, token int64, err error) {
	p := t.p
	addr, to := p.cfg.App, TargetApp
	if d.way == toLeader {
		addr, to = d.route.Addr, TargetLeader
	}
	dialer := net.Dialer{Timeout: p.cfg.DialTimeout, KeepAlive: 15 * time.Second}
	start := p.clock.Now()
	p.rec.Attempt(to)
	if to == TargetLeader {
		up, err = p.dialPeer(d.scope, addr, alpnTCP)
	} else {
		up, err = dialer.DialContext(d.scope, "tcp", addr)
	}
	if err != nil {
		return nil, 0, err
	}
	p.rec.Upstream(to, p.clock.Now().Sub(start))
	if d.way == toApp {
		return up, d.route.Token, nil
	}
	p.rec.Forwarded(hop + 1)
	if token, err = t.placed(up, hop+1, hd.remaining()); err != nil {
		_ = up.Close()
		return nil, 0, err
	}
	return up, token, nil
}

// placed sends the preamble and waits for the peer's ack, as long as the
// peer may hold the connection plus a dial of its own; it returns the
// token of the leadership that took the connection.
func (t *tcpProxy) placed(up net.Conn, hop int, hold time.Duration) (int64, error) {
	// Twelve bytes into a new connection's empty send buffer: this write
	// does not block.
	if _, err := up.Write(preamble(hop, hold)); err != nil {
		return 0, err
	}
	timer := t.p.clock.AfterFunc(hold+t.p.cfg.DialTimeout, func() { _ = up.SetReadDeadline(past) })
	b := make([]byte, ackLen)
	_, err := io.ReadFull(up, b)
	if !timer.Stop() {
		err = errors.New("timed out") // and the connection's reads with it
	}
	if err != nil {
		return 0, fmt.Errorf("no acknowledgement from the leader's proxy: %w", err)
	}
	if b[0] != ackPlaced {
		return 0, errBounced
	}
	return int64(binary.BigEndian.Uint64(b[1:])), nil
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// splice copies both ways until both sides are done, one fails, the
// guard finds it idle or stalled, or scope ends (the leadership it went
// to): then both connections are closed at once.
func (t *tcpProxy) splice(c *trackedConn, up net.Conn, scope context.Context) Result {
	p := t.p
	var why atomic.Pointer[error]
	cut := func(err error) {
		if err != nil {
			why.CompareAndSwap(nil, &err)
		}
		_ = c.Close()
		_ = up.Close()
	}
	g := newGuard(p.clock, p.cfg.BodyTimeout, p.cfg.IdleTimeout, cut)
	stop := context.AfterFunc(scope, func() { cut(context.Cause(scope)) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(up, c, g, 0, cut)
	}()
	pipe(c, up, g, 1, cut)
	<-done
	stop()
	g.stop()
	_ = up.Close()
	errp := why.Load()
	if errp == nil {
		return ResultOK
	}
	switch err := *errp; {
	case errors.Is(err, errLeadershipLost), errors.Is(err, errLeaderChanged), errors.Is(err, errNewerLeader):
		return ResultLeadershipLost
	case errors.Is(err, errIdle):
		return ResultIdle
	case errors.Is(err, errStalled):
		return ResultTimeout
	}
	return ResultShutdown
}

// pipe copies src to dst, each write watched by the guard's slot; at the
// end of src it half-closes dst, so the other way can finish; on an error
// it cuts both.
func pipe(dst, src net.Conn, g *guard, slot int, cut func(error)) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, err := src.Read(buf)
		if n > 0 {
			g.progress(slot)
			_, werr := dst.Write(buf[:n])
			g.done(slot)
			if werr != nil {
				cut(nil)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			closeWrite(dst)
			return
		}
		if err != nil {
			cut(nil)
			return
		}
	}
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*trackedConn); ok {
		c = tc.Conn
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
