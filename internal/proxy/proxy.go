package proxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/electd/electd/internal/clock"
)

// maxHops bounds forwarding in TCP mode (docs/design/proxy.md, "Forwarding"): a
// follower forwards with hop 1; a proxy that no longer leads when a
// connection arrives forwards it once more with hop 2; a proxy never
// forwards what arrived with hop 2. It bounces it instead, at once and
// unprocessed, to the proxy before, which holds it and routes it again as
// its own view of the leader moves on. HTTP mode forwards once only: a
// forward names the leadership it is meant for, and a proxy that is not
// that leadership bounces it with its own view (misdirected.go).
const maxHops = 2

var (
	errShutdown = errors.New("proxy: shutting down")
	// ErrServing: Serve may be called once.
	ErrServing = errors.New("proxy: Serve called twice")
)

// Proxy forwards traffic to the leader: to the local application while
// this participant leads, else to the leader's proxy. Safe for concurrent
// use; Serve runs it.
type Proxy struct {
	cfg   Config
	lead  Leadership
	clock clock.Clock
	rec   Recorder
	log   *slog.Logger
	conns *connLimit // clients'
	peers *connLimit // peers', on PeerListen
	http  *httpProxy // HTTP mode
	tcp   *tcpProxy  // TCP mode
	// peerTLS authenticates the peers (peertls.go).
	peerTLS *peerTLS

	probe     *routeProbe         // the route's state: healthy, or failing and probed (probe.go)
	budget    budget              // re-sends that may repeat work (retry.go)
	jitter    func(n int64) int64 // a random number in [0, n), for backoffs
	kept      atomic.Int64        // what copies of request bodies may still take (body.go)
	served    atomic.Uint64       // requests (HTTP) and connections (TCP) that ended
	wake      Broadcast           // the route may have changed or a yield ended: held traffic looks again
	closed    chan struct{}       // closed when Serve starts shutting down
	closeOnce sync.Once
	stopping  context.Context // ends when closed is closed
	stop      context.CancelFunc
	serving   atomic.Bool
	wg        sync.WaitGroup // connection goroutines of TCP mode
	answers   atomic.Uint64  // the application's answers (HTTP mode): checkApp's proof of life
	checks    sync.WaitGroup // checkApp

	mu   sync.Mutex
	term *scope // this participant's leadership; nil while it does not lead
	dest *scope // the leader's proxy a follower forwards to; nil otherwise
	// placed holds, by the fencing token of the leadership that took
	// them, the connections a follower spliced through the leader's proxy
	// (TCP mode, upgrades): each ends once a newer leadership is known.
	placed   map[int64]*scope
	yielding int
	inflight int           // HTTP requests with the application (Yield waits for them)
	drained  chan struct{} // closed when inflight drops to 0
	held     int
	stepped  int64 // the token StepDown was last asked for
	checking bool  // checkApp runs
	// nextCheck is when the next checkApp may start: a probe timeout
	// after the start of the last probe that passed.
	nextCheck time.Time
	// hint is a newer leadership than this participant's view names, as
	// a peer's 421 told it: forwards go there until the view catches up.
	hint *Route
}

// httpProxy is HTTP mode: clients on Listen (HTTP/1.1, and HTTP/2 with
// prior knowledge), peers on PeerListen (inside mutual TLS: HTTP/2, and
// HTTP/1.1 for upgrades), and one net/http/httputil.ReverseProxy for every
// hand-over (attempt.go): to the application (HTTP/1.1, or HTTP/2 with AppH2C)
// or to the leader's proxy (the peer pool; HTTP/1.1 for an
// upgrade). ReverseProxy brings what a forward must get right and a new
// copy would get wrong: hop-by-hop headers (those a Connection header
// names included), Upgrade (WebSocket) by hijacking and splicing both ways,
// trailers, 1xx answers, prompt flushing of streamed answers, and an
// ErrorHandler that is called before anything is written, so that a
// request that provably reached no application can be sent elsewhere.
// What it lacks (progress timeouts, the hold, the resend rule, the
// forwarding contract) is added around it.
type httpProxy struct {
	p      *Proxy
	appURL *url.URL
	app    *http.Transport // HTTP/1.1 to the application
	// appDirect: HTTP/1.1 to the application on the handler's goroutine,
	// for requests with nothing to stream (appclient.go).
	appDirect *appClient
	appH2     *http.Transport // HTTP/2 without TLS to the application
	peerH1    *http.Transport // upgrades to a peer's proxy
	pool      *peerPool       // everything else to a peer's proxy
	buffers   *buffers
	// errLog and copyBuffers are every attempt's ReverseProxy's.
	errLog      *log.Logger
	copyBuffers *bufferPool
	check       *checker       // the application, when answers time out (checkApp)
	active      sync.WaitGroup // handlers running
	// warn is for request-level warnings: each message at most once
	// every 10 s, with a count of those not logged (misdirected.go).
	warn *slog.Logger
	// grpcWarned: the warning that gRPC needs AppH2C was logged.
	grpcWarned atomic.Bool
	// relayed counts the requests relay handed over; noRelay sends every
	// request through ReverseProxy instead. The tests compare the two.
	relayed atomic.Int64
	noRelay bool
}

// tcpProxy is TCP mode: each connection is spliced to the application or
// to the leader's proxy, as stolon's proxy does (github.com/sorintlab/pollon),
// and cut when the leadership it went to ends.
type tcpProxy struct {
	p *Proxy
}

// peerPool is the connections to the peers' proxies (peerpool.go).
type peerPool struct {
	p *Proxy
	t *http2.Transport

	mu     sync.Mutex
	peers  map[string]*peerConns
	closed bool
	dials  sync.WaitGroup
}

type peerConns struct {
	conns []*http2.ClientConn
	dial  *peerDial // in progress, or nil
}

type peerDial struct {
	done chan struct{}
	err  error
}

// Serve serves client and peer (Config.Listeners) until ctx ends, then
// stops taking connections and returns nil once every connection is
// closed. In HTTP mode, requests in flight and held ones
// get DrainTimeout to finish first (a leader that handed over with Yield
// forwards its held requests to the new leader meanwhile); what is left
// is answered 503. In TCP mode every connection is closed at once: a
// spliced connection has no request boundary to drain at. Serve may be
// called once.
func (p *Proxy) Serve(ctx context.Context, client, peer net.Listener) error {
	if client == nil || peer == nil {
		return errors.New("proxy: Serve needs a client and a peer listener (Config.Listeners)")
	}
	if !p.serving.CompareAndSwap(false, true) {
		return ErrServing
	}
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		p.watch(stop)
	}()
	defer func() {
		close(stop)
		<-watched
		p.endScopes()
	}()
	// Only peers that hold the key get past the peer port's handshake.
	protos := []string{alpnH2, alpnHTTP1}
	if p.tcp != nil {
		protos = []string{alpnTCP}
	}
	peer = &peerListener{Listener: peer, cfg: p.peerTLS.serverConfig(protos...)}
	if p.http != nil {
		return p.http.serve(ctx, p.conns.listener(client), p.peers.listener(peer))
	}
	return p.tcp.serve(ctx, p.conns.listener(client), p.peers.listener(peer))
}

// shutdown wakes held traffic to give up.
func (p *Proxy) shutdown() {
	p.closeOnce.Do(func() { close(p.closed) })
	p.stop()
	p.wake.Notify()
}

// endScopes cuts whatever is still bound to a leadership: Serve is over.
func (p *Proxy) endScopes() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range []**scope{&p.term, &p.dest} {
		if *s != nil {
			(*s).cancel(errShutdown)
			*s = nil
		}
	}
	for tok, s := range p.placed {
		s.cancel(errShutdown)
		delete(p.placed, tok)
	}
}

// watch follows the leadership: it cuts what a lost leadership or a
// replaced leader still holds and wakes held traffic at every change,
// and looks again when the lease is due to end even if no change is
// announced (pollon's rule, made prompt: a stale leader must not serve).
func (p *Proxy) watch(stop <-chan struct{}) {
	for {
		changed := p.lead.Changed()
		p.mu.Lock()
		r := p.routeLocked()
		p.syncLocked(r)
		p.mu.Unlock()
		p.wake.Notify()
		var lease <-chan struct{}
		stopLease := func() {}
		if r.Leading && r.Lease > 0 {
			lease, stopLease = clock.Deadline(p.clock, r.Lease+time.Millisecond)
		}
		select {
		case <-changed:
		case <-lease:
		case <-stop:
		}
		stopLease()
		select {
		case <-stop:
			return
		default:
		}
	}
}

// syncLocked brings the scopes in line with r: a leadership that ended or
// a leader that changed ends its scope, which cuts what is bound to it.
func (p *Proxy) syncLocked(r Route) {
	if p.term != nil && (!r.Leading || r.Token != p.term.token) {
		p.term.cancel(errLeadershipLost)
		p.term = nil
	}
	if r.Leading && p.term == nil {
		p.term = newScope(r)
	}
	if p.dest != nil && (r.Leading || r.Addr != p.dest.addr || r.Token != p.dest.token) {
		// A newer leadership (a greater token) proves the old one's lease
		// ended; a view that merely lost the leader proves nothing.
		cause := errLeaderChanged
		if r.Token > p.dest.token {
			cause = errNewerLeader
		}
		p.dest.cancel(cause)
		p.dest = nil
		if h := p.http; h != nil { // kept alive to a leader gone
			go h.peerH1.CloseIdleConnections()
			go h.pool.closeIdle()
		}
	}
	if !r.Leading && r.Addr != "" && p.dest == nil {
		p.dest = newScope(r)
	}
	for tok, s := range p.placed {
		if r.Token > tok { // a newer leadership than the one that took them
			s.cancel(errNewerLeader)
			delete(p.placed, tok)
		}
	}
}

// placedScope is the scope of what went to the leadership with this
// fencing token through its proxy (a spliced connection, an upgrade, a
// forward): it ends once a newer leadership is known (stolon's proxy cuts
// connections to a master that is no longer elected), never merely because
// this participant's view lost the leader for a moment (a hand-over in
// progress, its own session lost), nor by a view that lags behind a
// re-forward (TCP mode). Ended already when the view has moved past it.
func (p *Proxy) placedScope(token int64) context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.placed[token]; ok {
		return s.ctx
	}
	s := newScope(Route{Token: token})
	select {
	case <-p.closed:
		s.cancel(errShutdown)
		return s.ctx
	default:
	}
	if r := p.routeLocked(); r.Token > token {
		s.cancel(errNewerLeader)
		return s.ctx
	}
	if p.placed == nil {
		p.placed = map[int64]*scope{}
	}
	p.placed[token] = s
	return s.ctx
}

// routeLocked is the route as the Leadership says, or the newer
// leadership a peer's 421 named (hint) until the view reaches it.
func (p *Proxy) routeLocked() Route {
	r := p.lead.Route()
	if h := p.hint; h != nil {
		if r.Leading || r.Token >= h.Token || r.Election != h.Election {
			p.hint = nil
		} else {
			r = *h
		}
	}
	return r
}

// redirect records the leadership a peer's 421 named, when it is newer
// than this participant's view of the same election: the next attempt
// goes there at once (docs/design/proxy.md, "Forwarding"). It reports whether
// the route moved.
func (p *Proxy) redirect(v Route) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.routeLocked()
	if r.Leading || v.Addr == "" || v.Election != r.Election || v.Token <= r.Token {
		return false
	}
	p.hint = &Route{ID: v.ID, Token: v.Token, Addr: v.Addr, Election: v.Election}
	p.syncLocked(p.routeLocked())
	return true
}

// currentLocked is the route now, with the scopes brought in line with
// it; closed reports that Serve is shutting down.
func (p *Proxy) currentLocked() (r Route, closed bool) {
	r = p.routeLocked()
	p.syncLocked(r)
	select {
	case <-p.closed:
		return r, true
	default:
		return r, false
	}
}

// decide re-checks the route right before traffic is handed on
// (docs/design/proxy.md, "Forwarding"). hop is how many proxies forwarded it
// already (TCP mode; a client's request or connection has 0); drain
// counts a toApp request as in flight for Yield, until appDone.
func (p *Proxy) decide(hop int, drain bool) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, closed := p.currentLocked()
	switch {
	case closed:
		return decision{way: toNone, route: r}
	case r.Leading && p.yielding == 0 && drain && p.appFullLocked():
		return p.busyLocked(r)
	case r.Leading && p.yielding == 0:
		if drain {
			p.inflight++
		}
		return decision{way: toApp, route: r, scope: p.term.ctx}
	case hop >= maxHops:
		return decision{way: toBounce, route: r}
	case r.Leading:
		return decision{way: toWait, route: r, why: "this participant is handing leadership over"}
	case r.ID == "":
		return decision{way: toWait, route: r, why: "no leader is known"}
	case r.Addr == "":
		return decision{way: toWait, route: r, why: fmt.Sprintf("the leader %q publishes no proxy address", r.ID)}
	}
	return decision{way: toLeader, route: r, scope: p.dest.ctx}
}

// decideTake decides on a forward a peer sent for the leadership token of
// election (HTTP mode): taken (toApp, counted in flight) when this
// participant leads that election with that token and a valid lease;
// held (toWait) while that leadership is handing over; else bounced
// (toBounce) with this participant's view. A forward is never forwarded
// again.
func (p *Proxy) decideTake(election string, token int64) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, closed := p.currentLocked()
	mine := r.Leading && r.Election == election && r.Token == token && election != ""
	switch {
	case closed:
		return decision{way: toNone, route: r}
	case mine && p.yielding == 0 && p.appFullLocked():
		return p.busyLocked(r)
	case mine && p.yielding == 0:
		p.inflight++
		return decision{way: toApp, route: r, scope: p.term.ctx}
	case mine:
		return decision{way: toWait, route: r, why: "the leader is handing leadership over"}
	}
	return decision{way: toBounce, route: r}
}

// appFullLocked reports that the application has AppMaxInFlight requests
// (as HAProxy's server maxconn): the next waits in the hold, and appDone
// wakes held traffic when one ends. Every held request looks again then,
// and the first to decide takes the place: no queue order, bounded by
// the hold time.
func (p *Proxy) appFullLocked() bool {
	return p.cfg.AppMaxInFlight > 0 && p.inflight >= p.cfg.AppMaxInFlight
}

func (p *Proxy) busyLocked(r Route) decision {
	return decision{way: toWait, route: r, busy: true,
		why: fmt.Sprintf("the application has proxy.app_max_in_flight (%d) requests", p.cfg.AppMaxInFlight)}
}

// view is the route now: a bounce's view of the leader.
func (p *Proxy) view() Route {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.routeLocked()
}

// stillLeads reports that this participant still leads with the
// leadership token, its lease valid.
func (p *Proxy) stillLeads(token int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, closed := p.currentLocked()
	return !closed && r.Leading && r.Token == token && p.term != nil
}

// appDone ends a request counted in flight by decide.
func (p *Proxy) appDone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight--
	if p.cfg.AppMaxInFlight > 0 && p.inflight == p.cfg.AppMaxInFlight-1 {
		p.wake.Notify() // a place for one of those held by appFullLocked
	}
	if p.inflight == 0 && p.drained != nil {
		close(p.drained)
		p.drained = nil
	}
}
