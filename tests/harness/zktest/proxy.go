package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP forwarder on a free loopback port that can inject faults into the
// connections it carries. Point a client (or a ZooKeeper server's peer address) at Addr
// instead of the target. All methods are safe for concurrent use.
//
// Modes: forwarding (the default, and after Heal), blackholed (Blackhole) and refusing
// (Refuse). Reset and DropAfterCreate act on connections without changing the mode, and
// Delay slows every connection down in any mode.
type Proxy struct {
	target string
	ln     net.Listener

	mu sync.Mutex
	// electionAddr, when set, makes the proxy rewrite the address in the initial message of
	// each new ZooKeeper election connection (see electionRewriter).
	electionAddr string
	// dialRetry is how long a new connection keeps trying to reach a target that refuses
	// (0: one attempt, then the client connection is reset).
	dialRetry time.Duration
	mode      proxyMode
	healed    chan struct{} // closed when the proxy leaves blackhole mode
	conns     map[*proxyConn]struct{}
	closed    bool
	dropNext  bool          // DropAfterCreate armed
	delay     time.Duration // Delay: how long the server's bytes are held
	creates   int
	requests  int

	wg sync.WaitGroup // accept loop and connection goroutines
}

type proxyMode int

const (
	modeForward proxyMode = iota
	modeBlackhole
	modeRefuse
)

// dialTimeout bounds how long the proxy tries to reach its target for a new connection.
const dialTimeout = 5 * time.Second

// NewProxy listens on a free loopback port and forwards every connection to target
// ("host:port"). Close it when done.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("zktest: proxy listen: %w", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[*proxyConn]struct{}{}, healed: closedChan()}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// setElectionRewrite makes new connections rewrite the initial election message to
// advertise addr (see electionRewriter).
func (p *Proxy) setElectionRewrite(addr string) {
	p.locked(func() { p.electionAddr = addr })
}

// setDialRetry makes new connections keep dialling a refusing target for up to d before
// they give up. A ZooKeeper follower that reaches a proxy in front of a leader still
// binding its quorum port would otherwise see its connection accepted and then reset, which
// it treats as a failed leader (a real refused connect it would retry).
func (p *Proxy) setDialRetry(d time.Duration) {
	p.locked(func() { p.dialRetry = d })
}

// locked runs f with p.mu held.
func (p *Proxy) locked(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
}

// Addr returns "127.0.0.1:<port>", the address to dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Close stops listening, closes every connection and waits for the proxy's goroutines.
// It is idempotent.
func (p *Proxy) Close() {
	var was bool
	p.locked(func() { was, p.closed = p.closed, true })
	if was {
		return
	}
	_ = p.ln.Close()
	p.Refuse()
	p.wg.Wait()
}

// Blackhole stops forwarding bytes in both directions without closing anything, like a
// dropped route: senders' writes succeed until the kernel buffers fill, and nobody sees an
// error. New connections are accepted but not forwarded (the target is not even dialled)
// until Heal, which then delivers what was held, like TCP retransmission.
func (p *Proxy) Blackhole() {
	p.locked(func() { p.setModeLocked(modeBlackhole) })
}

// Reset closes every current connection at once, on both sides, with an RST. It does not
// change the mode: in forwarding mode new connections work.
func (p *Proxy) Reset() {
	p.abortAll(false)
}

// Refuse resets every current connection and closes new ones as soon as they are accepted
// (the client sees its connection reset) until Heal.
func (p *Proxy) Refuse() {
	p.abortAll(true)
}

// abortAll resets every current connection, after entering refuse mode if refuse is set.
func (p *Proxy) abortAll(refuse bool) {
	p.mu.Lock()
	if refuse {
		p.setModeLocked(modeRefuse)
	}
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.abort()
	}
}

// Heal returns to normal forwarding. Bytes held during a Blackhole are then delivered, and
// connections accepted meanwhile are connected to the target.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.setModeLocked(modeForward)
}

// DropAfterCreate arms a one-shot fault. The proxy parses the ZooKeeper client-to-server
// framing (4-byte big-endian length frames; the first frame of a connection is the
// ConnectRequest, later frames start with xid int32, opcode int32). When the next create
// request (opcode 1 create, 15 create2, 19 createContainer or 21 createTTL) passes through
// any connection, it is forwarded whole, then that connection is closed at once towards the
// client (RST) and half-closed towards the server, whose reply is discarded: the server
// executes the create, the client gets a connection error and never sees the reply. The
// server executes it for certain only with Options.RunStaleRequests: by default it may drop
// the request, its connection being closed before it ran.
func (p *Proxy) DropAfterCreate() {
	p.locked(func() { p.dropNext = true })
}

// Delay holds every byte the target sends for d before the client gets it, on current
// connections and new ones, in order, as a slow server or link would: each request's
// round-trip grows by d (a ZooKeeper client's pings too, so a d near 2/3 of its session
// timeout makes it give up its connection). Delay(0) ends it; bytes already held keep
// their time.
func (p *Proxy) Delay(d time.Duration) {
	p.locked(func() { p.delay = max(d, 0) })
}

func (p *Proxy) delayNow() (d time.Duration) {
	p.locked(func() { d = p.delay })
	return d
}

// Conns returns the number of connections currently open through the proxy (accepted and
// not yet closed, including ones held by a blackhole).
func (p *Proxy) Conns() (n int) {
	p.locked(func() { n = len(p.conns) })
	return n
}

// Counts returns the ZooKeeper request frames forwarded from clients to the server since
// the proxy was created: creates (opcodes 1, 15, 19, 21), each counted once written whole,
// and all requests (every frame after a connection's ConnectRequest, pings included).
func (p *Proxy) Counts() (creates, requests int) {
	p.locked(func() { creates, requests = p.creates, p.requests })
	return creates, requests
}

func (p *Proxy) setModeLocked(m proxyMode) {
	if p.mode == m {
		return
	}
	if m == modeBlackhole {
		p.healed = make(chan struct{})
	} else if p.mode == modeBlackhole {
		close(p.healed)
	}
	p.mode = m
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond) // e.g. EMFILE: back off, do not spin
			continue
		}
		p.mu.Lock()
		if p.closed || p.mode == modeRefuse {
			p.mu.Unlock()
			abortConn(c)
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		pc := &proxyConn{p: p, client: c, ctx: ctx, cancel: cancel}
		if p.electionAddr != "" {
			pc.rewrite = &electionRewriter{addr: p.electionAddr}
		}
		p.conns[pc] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go pc.run()
	}
}

// waitForward blocks while the proxy is blackholed. It reports false when the connection
// must be dropped instead (reset, refused or closed).
func (p *Proxy) waitForward(ctx context.Context) bool {
	for {
		p.mu.Lock()
		mode, healed := p.mode, p.healed
		p.mu.Unlock()
		switch mode {
		case modeForward:
			return ctx.Err() == nil
		case modeRefuse:
			return false
		}
		select {
		case <-healed:
		case <-ctx.Done():
			return false
		}
	}
}

// takeDrop reports whether DropAfterCreate is armed, disarming it.
func (p *Proxy) takeDrop() (d bool) {
	p.locked(func() { d, p.dropNext = p.dropNext, false })
	return d
}

func (p *Proxy) count(creates, requests int) {
	if creates == 0 && requests == 0 {
		return
	}
	p.locked(func() { p.creates, p.requests = p.creates+creates, p.requests+requests })
}
