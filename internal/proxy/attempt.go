package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
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

// An attempt is one hand-over of a request (docs/design/proxy.md, "Forwarding"):
// to the application, or to the leader's proxy; bound to the leadership
// it goes to. It is a value of its own whose methods are its
// ReverseProxy's hooks (Rewrite, Transport, ModifyResponse,
// ErrorHandler), as Caddy's reverse proxy keeps a request's state: the
// hooks read the attempt they belong to, never the request's context.

// attempt is one hand-over of a request, to the application or to the
// leader's proxy.
type attempt struct {
	h       *httpProxy
	q       *exchange
	route   Route
	to      Target
	h2      bool          // to the application over HTTP/2
	upgrade bool          // to the leader's proxy over HTTP/1.1 (an upgrade)
	hold    time.Duration // sent to the leader's proxy
	sent    time.Time
	g       *guard
	// ctx is the attempt's context: its cause says why it ended.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// inflight: counted with the application for Yield until release.
	inflight bool
	// unbind, unterm and holdT undo bind and bindTerm.
	unbind, unterm func() bool
	holdT          clock.Timer
	trace          httptrace.ClientTrace
	rp             httputil.ReverseProxy            // its hooks are this attempt's methods
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
	// oneWrite: the body is small and here, and leaves with the headers
	// (rewrite).
	oneWrite bool
	// pending: the answer relay read, for ReverseProxy to carry on with
	// (RoundTrip gives it).
	pending *http.Response
}

// oneWriteBody bounds a body sent with its request's headers in one
// write: well under a socket's send buffer, so that the write does not
// wait on the application.
const oneWriteBody = 8 << 10

// flushEvery bounds how long a part of an answer of known length waits in
// the server's buffer. Not -1 (at once): that costs a flush of the headers
// on a goroutine of its own and a write per part, which doubled what a
// small answer cost on its way through; a whole small answer leaves in one
// write when the handler returns.
const flushEvery = 5 * time.Millisecond

// newAttempt readies q's hand-over where d says. A hand-over to the
// application is cut when the leadership ends. A forward to the leader's
// proxy is bound to that leader's term (placedScope): when a newer leader
// is known it is sent there if the old one provably never took it
// (endTerm), else it ends; a view that only lost the leader for a moment
// ends nothing. An upgrade sent to the leader's proxy is cut when this
// view of the leader changes until its 101 names the leadership that took
// it, and from then on once a newer one is known. Call end when it is
// over.
func (h *httpProxy) newAttempt(q *exchange, d decision) *attempt {
	p := h.p
	a := &attempt{h: h, q: q, route: d.route, sent: p.clock.Now()}
	a.ctx, a.cancel = context.WithCancelCause(q.r.Context())
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
		a.bindTerm()
	}
	a.g = newGuard(p.clock, p.cfg.BodyTimeout, 0, a.stalled)
	if q.b != nil {
		q.b.attach(a.g)
	}
	q.w.g.Store(a.g)
	q.w.taken.Store(&a.taken)
	a.trace.GotConn = a.gotConn
	if b := q.b; b != nil && b.buffered() && len(b.whole) <= oneWriteBody && len(q.r.Trailer) == 0 && !p.cfg.ResendUnreadBody {
		// ResendUnreadBody needs each read watched (touched).
		a.oneWrite = true
		a.trace.WroteRequest = a.wroteRequest
	}
	a.rp = httputil.ReverseProxy{Rewrite: a.rewrite, Transport: a, ErrorHandler: a.keepError,
		ModifyResponse: a.modify, ErrorLog: h.errLog, BufferPool: h.copyBuffers, FlushInterval: flushEvery}
	return a
}

// run hands the request over; what came of it is in the attempt (err, and
// ctx's cause) once it returns.
func (a *attempt) run() {
	if a.pending == nil && a.relayable() {
		a.relay()
		return
	}
	q := a.q
	// httptrace is net/http's one way to learn which connection the
	// transport chose (gotConn); it carries a hook, not the attempt.
	ctx := httptrace.WithClientTrace(a.ctx, &a.trace)
	a.rp.ServeHTTP(q.w, q.r.WithContext(ctx))
}

// bindTerm binds a forward to the leader's term it goes to (placedScope):
// endTerm decides what becomes of it when a newer leader is known. Until
// the leader's proxy takes it, what is left of the hold time bounds the
// wait (the leader's proxy, told as much, gives up then too).
func (a *attempt) bindTerm() {
	p := a.h.p
	term := p.placedScope(a.route.Token)
	a.unterm = context.AfterFunc(term, func() { a.endTerm(term) })
	a.holdT = p.clock.AfterFunc(a.hold, func() {
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
		a.h.p.appDone()
	}
}

// end undoes what newAttempt set up, once ReverseProxy has returned.
func (a *attempt) end() {
	q := a.q
	q.w.g.Store(nil)
	q.w.taken.Store(nil)
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
	a.cancel(nil)
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

// wroteRequest is the attempt's httptrace WroteRequest, for a body sent
// in one write with the headers: it is all written (or failed), so no
// more of it is due.
func (a *attempt) wroteRequest(httptrace.WroteRequestInfo) { a.g.done(0) }

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
func (a *attempt) endTerm(scope context.Context) {
	cause := context.Cause(scope)
	if !errors.Is(cause, errNewerLeader) {
		a.cancel(cause) // shutting down
		return
	}
	cc := a.cc.Load()
	pinged := cc == nil || a.h.pool.ping(cc) == nil
	switch {
	case a.answered.Load():
		return
	case pinged && !a.taken.Load():
		a.termEnded.Store(true)
	}
	a.cancel(cause)
}

// RoundTrip is ReverseProxy's Transport: the proxy's transport for where
// the attempt goes carries it.
func (a *attempt) RoundTrip(req *http.Request) (*http.Response, error) {
	h := a.h
	if res := a.pending; res != nil {
		a.pending = nil
		return res, nil
	}
	switch {
	case a.to == TargetApp && a.h2:
		return h.appH2.RoundTrip(req)
	case a.to == TargetApp && direct(req, a.oneWrite):
		return h.appDirect.roundTrip(req)
	case a.to == TargetApp:
		return h.app.RoundTrip(req)
	case a.upgrade:
		return h.peerH1.RoundTrip(req)
	}
	cc, err := h.pool.get(req.Context(), req.URL.Host)
	if err != nil {
		return nil, &noConnError{err}
	}
	a.cc.Store(cc)
	a.conn.Store(true)
	return roundTripPeer(cc, req)
}

// keepError is ReverseProxy's ErrorHandler: it keeps the error for judge,
// which may still send the request again, and writes nothing.
func (a *attempt) keepError(_ http.ResponseWriter, _ *http.Request, err error) { a.err = err }

// modify is ReverseProxy's ModifyResponse: the answer's headers are in.
func (a *attempt) modify(res *http.Response) error {
	h := a.h
	p := h.p
	p.rec.Upstream(a.to, p.clock.Now().Sub(a.sent))
	if a.to == TargetApp {
		p.appAnswered()
	} else if v, ok := readView(res.Header); ok && res.StatusCode == http.StatusMisdirectedRequest {
		a.view = &v
		if v.Election != "" && v.Election != a.route.Election {
			return h.misdirected(a.route, v) // errMisdirected, or a bounce held until the views agree
		}
		a.redirected = p.redirect(v)
		return errBounced // judge routes it again; nothing is written
	}
	a.answered.Store(true)
	if _, ok := res.Header["Content-Type"]; !ok {
		// The answer's type is the application's: none is sniffed for one
		// it sent without (a nil value stops net/http's servers and
		// h1Writer), as HAProxy and nginx add none.
		a.q.w.Header()["Content-Type"] = nil
	}
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
		if a.to == TargetApp && inHand(res.Body) {
			// Nothing can be late: no flush timer (docs/design/proxy.md,
			// "A hop's cost"); the answer leaves in one write as the
			// handler returns.
			a.rp.FlushInterval = 0
		}
		a.g.progress(1)
		res.Body = &upstreamBody{ReadCloser: res.Body, g: a.g, res: res}
		if a.to == TargetLeader {
			return h.holdAnswer(a.cc.Load(), res) // judge sees its error: nothing was written
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
func (a *attempt) rewrite(pr *httputil.ProxyRequest) {
	q := a.q
	if a.to == TargetApp {
		pr.SetURL(a.h.appURL)
	} else {
		pr.SetURL(&url.URL{Scheme: "http", Host: a.route.Addr})
	}
	pr.Out.Host = pr.In.Host
	// The same map as the incoming request's: net/http fills in the
	// values of its trailers when its body ends, and the transport sends
	// them after the body it streams.
	if pr.In.Trailer != nil {
		pr.Out.Trailer = pr.In.Trailer
	}
	if a.oneWrite {
		// net/http's transports flush the headers apart from a body they
		// do not know to be in memory: two writes, and two reads at the
		// other end. This one is known: one write.
		body := q.b.whole
		pr.Out.Body = io.NopCloser(bytes.NewReader(body))
		pr.Out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	a.outHeader(pr.In.Header, pr.Out.Header)
}

// outHeader sets the fields of the outgoing header out that the proxy
// owns, from in (the incoming request's, as admit left it): rewrite's for
// ReverseProxy, and relay's.
func (a *attempt) outHeader(in, out http.Header) {
	q := a.q
	for _, f := range owned {
		if v := in[f.name]; len(v) > 0 && f.from == fromTrusted {
			out[f.name] = v
		}
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
	case a.h.p.cfg.ResendUnreadBody:
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
