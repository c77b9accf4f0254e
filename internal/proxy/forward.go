package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/electd/electd/internal/clock"
)

// One hand-over of a request (docs/design/proxy.md, "Forwarding"): to the
// application, or to the leader's proxy; bound to the leadership it goes
// to; judged by what it learnt (resend.go).

// request is one request on its way through this proxy, over its
// attempts.
type request struct {
	r      *http.Request
	w      *writer
	b      *body // nil without a body
	hd     *holder
	id     string // Electd-Request-Id
	h2     bool   // the client spoke HTTP/2
	safe   bool   // idempotent (headers.go)
	peer   bool   // a peer's forward, on PeerListen
	marked bool   // the Taken interim answer was sent (peer.go)
	// resends: how often it was sent again after an attempt that may
	// have reached the application (retry.go).
	resends int
	// last is the last attempt's context, whose cause says why it ended
	// (finish logs it).
	last context.Context
	// The writer and the holder, allocated with the request.
	wv  writer
	hdv holder
}

// newRequest is q for r answered through rw, held within budget.
func newRequest(p *Proxy, rw http.ResponseWriter, r *http.Request, budget time.Duration) *request {
	q := &request{r: r, safe: idempotent(r)}
	q.wv.ResponseWriter = rw
	q.w = &q.wv
	q.hdv.init(p, budget)
	q.hd = &q.hdv
	return q
}

// attempt is one hand-over of a request, to the application or to the
// leader's proxy; ReverseProxy's hooks find it in the request's context.
type attempt struct {
	p       *Proxy
	q       *request
	route   Route
	to      Target
	h2      bool          // to the application over HTTP/2
	upgrade bool          // to the leader's proxy over HTTP/1.1 (an upgrade)
	hold    time.Duration // sent to the leader's proxy
	sent    time.Time
	g       *guard
	cancel  context.CancelCauseFunc // ends the attempt, with its cause
	// inflight: counted with the application for Yield until release.
	inflight bool
	// unbind, unterm and holdT undo bind and bindTerm.
	unbind, unterm func() bool
	holdT          clock.Timer
	trace          httptrace.ClientTrace
	err            error                            // what ReverseProxy reported, before writing anything
	conn           atomic.Bool                      // a connection was had: the request may have been sent
	ac             *appConn                         // the HTTP/1 connection to the application it went on
	cc             atomic.Pointer[http2.ClientConn] // the peer connection it went on
	// taken: the leader's proxy said it takes it (its 102); termEnded:
	// a newer leader is known and that proxy answered a ping without;
	// answered: the answer's headers are in.
	taken, termEnded, answered atomic.Bool
	view                       *Route // the view of a proxy that bounced it
	redirected                 bool   // that view named a newer leader: routed there at once
}

type attemptKey struct{}

func attemptOf(ctx context.Context) *attempt { return ctx.Value(attemptKey{}).(*attempt) }

// outcome is how an attempt ended: a result, or again (err says why):
// route the request again, at once (now: the route has moved) or after a
// wait.
type outcome struct {
	result Result
	again  bool
	now    bool
	err    error
	// wait: how long to wait before the re-send (a backoff). failed: the
	// target took nothing (no connection, nothing written, a bounce);
	// moot: the attempt says nothing of the route (the route moved, the
	// client went away, the hold time ran out). The route's probe learns
	// which.
	wait         time.Duration
	failed, moot bool
}

var (
	// errNewerLeader: the leader a forward went to was succeeded by a
	// newer leadership (a greater fencing token), so its lease has ended.
	errNewerLeader = errors.New("proxy: a newer leader is known")
	// errMisdirected: the leader's proxy bounced a forward as another
	// election's participant (another path: misdirected.go).
	errMisdirected = errors.New("proxy: the leader's proxy takes part in another election")
)

// forward hands q to the application (this participant leads) or to the
// leader's proxy. What is handed to the application is cut when the
// leadership ends. A forward to the leader's proxy is bound to that
// leader's term (placedScope): when a newer leader is known it is sent
// there if the old one provably never took it (endTerm), else it ends; a
// view that only lost the leader for a moment ends nothing. An upgrade sent to
// the leader's proxy is cut when this view of the leader changes until
// its 101 names the leadership that took it, and from then on once a
// newer one is known.
func (h *httpProxy) forward(q *request, d decision) outcome {
	p := h.p
	ctx, cancel := context.WithCancelCause(q.r.Context())
	defer cancel(nil)
	q.last = ctx
	a := &attempt{p: p, q: q, route: d.route, sent: p.clock.Now(), cancel: cancel}
	defer a.end()
	if d.way == toApp {
		// The application gets the protocol it speaks, whatever the
		// client spoke (docs/design/proxy-app.md, "Any application").
		a.to, a.h2 = TargetApp, p.cfg.AppProtocol == AppH2C && !isUpgrade(q.r.Header)
		a.inflight = true // decide counted it for Yield
		if !a.h2 && q.h2 && isGRPC(q.r.Header) && h.grpcWarned.CompareAndSwap(false, true) {
			p.log.Warn("a gRPC request goes to the application over HTTP/1.1, which gRPC does not speak: "+
				"set proxy.app_protocol to h2c for a gRPC application", "request_id", q.id)
		}
	} else {
		a.to, a.upgrade, a.hold = TargetLeader, isUpgrade(q.r.Header), q.hd.remaining()
		p.rec.Forwarded(1)
	}
	p.rec.Attempt(a.to)
	if d.way == toApp || a.upgrade {
		a.bind(d.scope)
	} else {
		h.bindTerm(a)
	}
	a.g = newGuard(p.clock, p.cfg.BodyTimeout, 0, a.stalled)
	if q.b != nil {
		q.b.attach(a.g)
	}
	q.w.g.Store(a.g)
	q.w.a.Store(a)
	a.trace.GotConn = a.gotConn
	ctx = httptrace.WithClientTrace(context.WithValue(ctx, attemptKey{}, a), &a.trace)
	h.rp.ServeHTTP(q.w, q.r.WithContext(ctx))
	return h.judge(a, ctx)
}

// bindTerm binds a forward to the leader's term it goes to (placedScope):
// endTerm decides what becomes of it when a newer leader is known. Until
// the leader's proxy takes it, what is left of the hold time bounds the
// wait (the leader's proxy, told as much, gives up then too).
func (h *httpProxy) bindTerm(a *attempt) {
	term := h.p.placedScope(a.route.Token)
	a.unterm = context.AfterFunc(term, func() { h.endTerm(a, term, a.cancel) })
	a.holdT = h.p.clock.AfterFunc(a.hold, func() {
		if !a.taken.Load() {
			a.cancel(errHoldExpired)
		}
	})
}

// bind makes the attempt end with scope (ModifyResponse runs on the
// handler's goroutine, as forward does): an upgrade through a peer is bound
// to the leadership that took it once the 101 names it.
func (a *attempt) bind(scope context.Context) {
	if a.unbind != nil {
		a.unbind()
	}
	a.unbind = context.AfterFunc(scope, func() { a.cancel(context.Cause(scope)) })
}

// release ends the attempt's count of a request with the application, once:
// when the attempt ends, or earlier when its connection became a tunnel,
// which does not hold a hand-over back.
func (a *attempt) release() {
	if a.inflight {
		a.inflight = false
		a.p.appDone()
	}
}

// end undoes what forward set up, once ReverseProxy has returned.
func (a *attempt) end() {
	q := a.q
	q.w.g.Store(nil)
	q.w.a.Store(nil)
	if q.b != nil {
		q.b.attach(nil)
	}
	if a.g != nil {
		a.g.stop()
	}
	if a.holdT != nil {
		a.holdT.Stop()
	}
	if a.unterm != nil {
		a.unterm()
	}
	if a.unbind != nil {
		a.unbind()
	}
	a.release()
}

// gotConn is the attempt's httptrace GotConn: a connection was had, so the
// request may have been sent; an HTTP/1 connection to the application
// looks whether the application closed it first (appconn.go).
func (a *attempt) gotConn(info httptrace.GotConnInfo) {
	if ac, ok := info.Conn.(*appConn); ok && a.to == TargetApp && !a.h2 && !a.q.safe {
		ac.arm()
		a.ac = ac
	}
	a.conn.Store(true)
}

// stalled is the guard's trip: a body or a write made no progress for
// BodyTimeout. It bounds every pause of the attempt's bodies: the
// request's (a client that stopped sending) and the answer's (an
// application that stopped sending, or a client that stopped reading).
func (a *attempt) stalled(err error) {
	a.cancel(err)
	w := a.q.w
	rc := http.NewResponseController(w.ResponseWriter)
	_ = rc.SetReadDeadline(past) // a client that stopped sending its body
	if w.started.Load() {
		_ = rc.SetWriteDeadline(past) // a client that stopped reading
	}
}

// endTerm ends a forward whose leader's term ended (scope, its
// placedScope, is over), once a ping to that leader's proxy came back or
// failed: what it wrote before the ping's answer has arrived, in order.
// Sent again (termEnded) when it provably never reached that leader's
// application: a newer leader is known, so that leader's lease has ended
// and it takes nothing more, and it had not said it took this one, or
// nothing was sent yet at all. An answer under way goes on: that leader's
// proxy finishes it (its application answered while it led: a graceful
// hand-over drains first) or cuts it. The rest ends: taken (or unproven)
// is "may or may not have been processed", unless it may be sent twice.
func (h *httpProxy) endTerm(a *attempt, scope context.Context, cancel context.CancelCauseFunc) {
	cause := context.Cause(scope)
	if !errors.Is(cause, errNewerLeader) {
		cancel(cause) // shutting down
		return
	}
	cc := a.cc.Load()
	pinged := cc == nil || h.pool.ping(cc) == nil
	switch {
	case a.answered.Load():
		return
	case pinged && !a.taken.Load():
		a.termEnded.Store(true)
	}
	cancel(cause)
}

// judge turns what ReverseProxy reported into an outcome, answering the
// client unless the request is to be sent again or an answer is under way.
func (h *httpProxy) judge(a *attempt, ctx context.Context) outcome {
	p, q := h.p, a.q
	err := a.err
	if err == nil {
		return outcome{result: ResultOK}
	}
	cause := context.Cause(ctx)
	slow := isTimeout(err) || errors.Is(cause, errStalled) || errors.Is(cause, errHoldExpired)
	f := facts{
		started:    q.w.started.Load(),
		shutdown:   errors.Is(cause, errShutdown),
		noConn:     isNoConn(err) || !a.conn.Load(),
		unwritten:  isUnwritten(err) || a.ac != nil && a.ac.closedFirst.Load(),
		bounced:    errors.Is(err, errBounced),
		toPeer:     a.to == TargetLeader && !a.upgrade,
		taken:      a.taken.Load(),
		termEnded:  a.termEnded.Load(),
		unreadBody: p.cfg.ResendUnreadBody && a.to == TargetApp && q.b != nil && !q.b.touched() && cause == nil && !slow,
		safe:       q.safe && !a.upgrade,
		slow:       slow,
	}
	f.bodyAgain = q.b == nil || q.b.rewind()
	now := a.redirected || errors.Is(cause, errNewerLeader) || errors.Is(cause, errLeaderChanged)
	moot := now || q.r.Context().Err() != nil || errors.Is(cause, errHoldExpired)
	failed := !moot && (f.noConn || f.unwritten || f.bounced)
	if why, ok := resendable(f); ok && !errors.Is(err, errMisdirected) {
		if wait, ok := p.mayResend(q, why); ok {
			p.rec.Resent(why)
			return outcome{again: true, now: now, err: err, wait: wait, failed: failed, moot: moot}
		}
	}
	return outcome{result: h.fail(a, ctx, f), err: err, failed: failed, moot: moot}
}

// fail answers a request that is not sent again, and returns its result.
func (h *httpProxy) fail(a *attempt, ctx context.Context, f facts) Result {
	p, w := h.p, a.q.w
	err, cause := a.err, context.Cause(ctx)
	const maybe = "; it may or may not have been processed"
	switch {
	case f.started:
		return ResultUpstreamError // nothing more can be said
	case f.shutdown:
		return unavailable(w, ResultShutdown, "the proxy is shutting down")
	case errors.Is(err, errMisdirected):
		h.warn.Warn("the leader's proxy takes part in another election: check that every participant names the same "+
			"election and ZooKeeper", "leader_proxy", a.route.Addr, "its_election", a.view.Election, "this_election", a.route.Election)
		return unavailable(w, ResultMisdirected, "the leader's proxy at "+a.route.Addr+" takes part in another election ("+
			a.view.Election+"); the request was not processed")
	case a.q.peer && (f.noConn || f.unwritten):
		// Not processed, and this proxy streamed the peer's body: the peer
		// that forwarded it may still have it whole, and sends it again if
		// so when it is bounced.
		return bounce(a.q, p.view())
	case f.bounced || f.noConn || f.unwritten:
		// Not processed, but its body can no longer be sent again whole.
		return unavailable(w, ResultUpstreamError, "the request reached no application and its body cannot be sent again: "+err.Error())
	case errors.Is(cause, errStalled):
		// Closed after this answer: what is left of a stalled body would
		// otherwise hold the connection while net/http waits to discard it.
		w.Header().Set("Connection", "close")
		gatewayTimeout(w, "the request or its answer made no progress within the body timeout")
		return ResultTimeout
	case errors.Is(cause, errHoldExpired):
		return unavailable(w, ResultMaybeProcessed, "the leader's proxy did not take the request within the hold time ("+
			p.cfg.HoldTime.String()+")"+maybe)
	case errors.Is(cause, errLeadershipLost):
		return unavailable(w, ResultLeadershipLost, "leadership moved while the application had the request"+maybe)
	case errors.Is(cause, errNewerLeader), errors.Is(cause, errLeaderChanged):
		return unavailable(w, ResultMaybeProcessed, "leadership moved while the request was with the leader"+maybe)
	case a.q.r.Context().Err() != nil:
		return ResultCanceled
	case isTimeout(err):
		if a.to == TargetApp {
			p.appTimedOut(a.route, err)
		}
		gatewayTimeout(w, "no answer within the response timeout"+maybe)
		return ResultTimeout
	case a.to == TargetLeader:
		return unavailable(w, ResultMaybeProcessed, "the leader's proxy stopped answering ("+err.Error()+")"+maybe)
	}
	writeError(w, http.StatusBadGateway, "the application ended the connection without an answer ("+err.Error()+")"+maybe)
	return ResultMaybeProcessed
}

// keepError is ReverseProxy's ErrorHandler: it keeps the error for judge,
// which may still send the request again, and writes nothing.
func keepError(_ http.ResponseWriter, r *http.Request, err error) { attemptOf(r.Context()).err = err }

func isNoConn(err error) bool {
	var nc *noConnError
	var op *net.OpError
	return errors.As(err, &nc) || errors.As(err, &op) && op.Op == "dial"
}

func isUnwritten(err error) bool {
	var uw *unwrittenError
	return errors.As(err, &uw)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// modify is ReverseProxy's ModifyResponse: the answer's headers are in.
func (h *httpProxy) modify(res *http.Response) error {
	p := h.p
	a := attemptOf(res.Request.Context())
	p.rec.Upstream(a.to, p.clock.Now().Sub(a.sent))
	if a.to == TargetApp {
		p.appAnswered()
	} else if v, ok := readView(res.Header); ok && res.StatusCode == http.StatusMisdirectedRequest {
		a.view = &v
		if v.Election != "" && v.Election != a.route.Election {
			return h.misdirected(a) // errMisdirected, or a bounce held until the views agree
		}
		a.redirected = p.redirect(v)
		return errBounced // judge routes it again; nothing is written
	}
	a.answered.Store(true)
	tunnel := res.StatusCode == http.StatusSwitchingProtocols
	var token int64
	if tunnel && a.to == TargetLeader {
		token, _ = strconv.ParseInt(res.Header.Get(HeaderFencingToken), 10, 64)
	}
	// The answer's trailers lose theirs at its end (upstreamBody), and
	// their names are not announced (writer): until then an HTTP/2
	// transport's goroutine fills that map in.
	stripElectd(res.Header)
	a.g.done(0) // the application answered: the rest of the body is its business
	if !tunnel {
		a.g.progress(1)
		res.Body = &upstreamBody{ReadCloser: res.Body, g: a.g, res: res}
		if a.to == TargetLeader {
			return h.holdAnswer(a, res) // judge sees its error: nothing was written
		}
		return nil
	}
	// The tunnel is the leadership's that took it: the leader's proxy
	// tells the follower's which (as TCP mode's ack does), and the
	// follower's cuts the tunnel once a newer one is known.
	if a.to == TargetApp && a.q.peer {
		res.Header.Set(HeaderFencingToken, strconv.FormatInt(a.route.Token, 10))
	} else if token > 0 {
		a.bind(p.placedScope(token))
	}
	a.q.w.started.Store(true)
	a.g.stop() // the connection's own guard takes over once hijacked
	a.release()
	return nil
}

// rewrite is ReverseProxy's Rewrite: the request as the application or
// the leader's proxy gets it. ReverseProxy removed the forwarding headers
// from the outgoing request; they are the ones admit set (or a peer sent).
func (h *httpProxy) rewrite(pr *httputil.ProxyRequest) {
	a := attemptOf(pr.In.Context())
	q := a.q
	if a.to == TargetApp {
		pr.SetURL(h.appURL)
	} else {
		pr.SetURL(&url.URL{Scheme: "http", Host: a.route.Addr})
	}
	pr.Out.Host = pr.In.Host
	in, out := pr.In.Header, pr.Out.Header
	for _, f := range owned {
		if v := in[f.name]; len(v) > 0 && f.from == fromTrusted {
			out[f.name] = v
		}
	}
	// The same map as the incoming request's: net/http fills in the
	// values of its trailers when its body ends, and the transport sends
	// them after the body it streams.
	if pr.In.Trailer != nil {
		pr.Out.Trailer = pr.In.Trailer
	}
	if a.to == TargetLeader {
		setForward(out, a.route, a.hold, q.id, q.h2)
		if q.b != nil && q.b.buffered() {
			out.Del("Expect") // the body is here: nobody need ask for it
		}
		return
	}
	out.Set(HeaderFencingToken, strconv.FormatInt(a.route.Token, 10))
	out.Set(HeaderLeaderID, a.route.ID)
	switch {
	case q.b == nil:
		out.Del("Expect")
	case h.p.cfg.ResendUnreadBody:
		// The application asks for the body (100 Continue) when its
		// handler first reads it: a connection it closes before asking
		// carried a request it did nothing with, if it reads before it acts.
		out.Set("Expect", "100-continue")
	case q.b.buffered():
		// The body is here: no wait for a 100 Continue that an ordinary
		// server (Python's, any HTTP/1.0 one) never sends.
		out.Del("Expect")
	}
	// A streamed body keeps the client's own Expect, if it sent one.
}
