package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// One HTTP request's way through the proxy (docs/DESIGN.md, "Forwarding"):
// checked, routed, held, handed over, judged, sent again when that is safe.

func (h *httpProxy) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	h.active.Add(1)
	defer h.active.Done()
	p := h.p
	w := &writer{ResponseWriter: rw}
	if r.Method == http.MethodConnect {
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE")
		writeError(w, http.StatusMethodNotAllowed, "CONNECT: this is a reverse proxy to the leader, not a forward proxy")
		p.rec.Request(ResultBadRequest)
		return
	}
	hop, budget, err := readHops(r.Header, p.cfg.HoldTime)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		p.rec.Request(ResultBadRequest)
		return
	}
	stripElectd(r.Header)
	stripElectd(r.Trailer)
	var b *body
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		b = newBody(r.Body, &p.kept)
		defer b.release()
		r.Body = b
		// With a GetBody, net/http's transport sends a request again on a
		// new connection when a kept-alive one turns out closed before a
		// byte of it was written (an application that stops closes its
		// idle ones). It may have read the body into its buffer by then:
		// a body kept whole is sent from the start.
		r.GetBody = func() (io.ReadCloser, error) {
			if !b.rewind() {
				return nil, errBodySent
			}
			return b, nil
		}
		// A stream both ways (an echo, gRPC-Web) must not wait for the
		// request's end before its answer starts, which net/http's HTTP/1
		// server does by default.
		_ = http.NewResponseController(rw).EnableFullDuplex()
	}
	hd := newHolder(p, budget)
	res := ResultUpstreamError // kept if ReverseProxy aborts an answer broken off mid-body (a panic)
	defer func() {
		hd.done()
		p.rec.Request(res)
	}()
	res = h.route(w, r, hop, hd, b)
	if res == ResultCanceled {
		// Never the implicit 200 net/http writes for a handler that wrote
		// nothing; a client that went away does not read it anyway.
		unavailable(w, res, "the request was canceled")
	}
}

// route sends r where decide says, holding it while there is nowhere to
// send it and retrying a target that refused, within the hold time.
func (h *httpProxy) route(w *writer, r *http.Request, hop int, hd *holder, b *body) Result {
	p := h.p
	for {
		wake := p.wake.Changed()
		d := p.decide(hop, true)
		var retry time.Duration
		why := d.why
		switch d.way {
		case toNone:
			return unavailable(w, ResultShutdown, "the proxy is shutting down")
		case toBounce:
			// Connection: close, or the sender's transport sends the body
			// it held back for a 100 Continue, to keep the connection.
			w.Header().Set("Connection", "close")
			w.Header().Set(HeaderNotLeader, "1")
			writeError(w, http.StatusMisdirectedRequest, "forwarded twice to a participant that does not lead; route it again")
			return ResultBounced
		case toApp, toLeader:
			hd.leave()
			o := h.forward(w, r, d, hop, hd, b)
			if !o.retry {
				return o.result
			}
			if d.way == toApp && errors.Is(o.err, syscall.ECONNREFUSED) {
				p.stepDown(d.route, o.err)
			}
			retry, why = retryEvery, fmt.Sprintf("%s could not be reached (%v)", targetName(d), o.err)
		}
		if !hd.enter() {
			return unavailable(w, ResultHeldCap, fmt.Sprintf("too many requests wait for a leader (the limit is %d)", p.cfg.MaxHeld))
		}
		switch err := hd.wait(r.Context(), wake, retry); {
		case err == nil:
		case errors.Is(err, errHoldExpired):
			res := ResultNoLeader
			if retry > 0 {
				res = ResultUpstreamError
			}
			return unavailable(w, res, fmt.Sprintf("no leader to send the request to within the hold time (%v): %s", p.cfg.HoldTime, why))
		case errors.Is(err, errShutdown):
			return unavailable(w, ResultShutdown, "the proxy is shutting down")
		default:
			return ResultCanceled // the client went away
		}
	}
}

func targetName(d decision) string {
	if d.way == toApp {
		return "the application"
	}
	return fmt.Sprintf("the leader %q's proxy at %s", d.route.ID, d.route.Addr)
}

// errBodySent: a request's body was read, so it cannot be sent again.
var errBodySent = errors.New("proxy: the request's body was sent already")

// attempt is one hand-over of a request, to the application or to the
// leader's proxy; ReverseProxy's hooks find it in the request's context.
type attempt struct {
	route    Route
	to       Target
	addr     string        // the leader's proxy
	hop      int           // sent to the leader's proxy
	hold     time.Duration // sent to the leader's proxy
	sent     time.Time
	g        *guard
	w        *writer
	onTunnel func()      // a 101 turned the connection into a tunnel
	err      error       // what ReverseProxy reported, before writing anything
	conn     atomic.Bool // a connection was had: the request may have been sent
	// bind makes the attempt end with scope instead (ModifyResponse runs
	// on the handler's goroutine): an upgrade through a peer is bound to
	// the leadership that took it once the 101 names it.
	bind func(scope context.Context)
}

type attemptKey struct{}

func attemptOf(ctx context.Context) *attempt { return ctx.Value(attemptKey{}).(*attempt) }

// outcome is how an attempt ended: a result, or retry (err says why):
// route the request again, because it may be sent again (see judge).
type outcome struct {
	result Result
	retry  bool
	err    error
}

// forward hands r to the application (this participant leads) or to the
// leader's proxy. What is handed to the application is cut when the
// leadership ends. An upgrade sent to the leader's proxy is cut when this
// view of the leader changes until its 101 names the leadership that took
// it, and from then on once a newer one is known.
func (h *httpProxy) forward(w *writer, r *http.Request, d decision, hop int, hd *holder, b *body) outcome {
	p := h.p
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	a := &attempt{route: d.route, w: w}
	rp := h.toApp
	bind := true
	if d.way == toApp {
		a.to = TargetApp
		done := sync.OnceFunc(p.appDone)
		defer done()
		a.onTunnel = done // a tunnel does not hold a hand-over back
	} else {
		a.to, a.addr, a.hop, a.hold = TargetLeader, d.route.Addr, hop+1, hd.remaining()
		rp, bind = h.toPeer, isUpgrade(r.Header)
		p.rec.Forwarded(a.hop)
	}
	var unbind func() bool
	a.bind = func(scope context.Context) {
		if unbind != nil {
			unbind()
		}
		unbind = context.AfterFunc(scope, func() { cancel(context.Cause(scope)) })
	}
	defer func() {
		if unbind != nil {
			unbind()
		}
	}()
	if bind {
		a.bind(d.scope)
	}
	a.g = newGuard(p.clock, p.cfg.BodyTimeout, 0, func(err error) {
		cancel(err)
		rc := http.NewResponseController(w.ResponseWriter)
		_ = rc.SetReadDeadline(past) // a client that stopped sending its body
		if w.started.Load() {
			_ = rc.SetWriteDeadline(past) // a client that stopped reading
		}
	})
	defer a.g.stop()
	if b != nil {
		b.attach(a.g)
		defer b.attach(nil)
	}
	w.g.Store(a.g)
	defer w.g.Store(nil)
	a.sent = p.clock.Now()
	ctx = httptrace.WithClientTrace(context.WithValue(ctx, attemptKey{}, a),
		&httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { a.conn.Store(true) }})
	rp.ServeHTTP(w, r.WithContext(ctx))
	return h.judge(a, ctx, r, b)
}

// judge turns what ReverseProxy reported into an outcome, answering the
// client unless the attempt is to be retried or an answer is under way.
func (h *httpProxy) judge(a *attempt, ctx context.Context, r *http.Request, b *body) outcome {
	err := a.err
	if err == nil {
		return outcome{result: ResultOK}
	}
	cause := context.Cause(ctx)
	// Sent again, wherever the route says now: a request that provably
	// reached no application (a dial refused, a leadership that ended
	// before a connection was had, a bounce, a connection the next hop
	// closed before it asked for the body: see expectContinue) if its body
	// is unread or kept whole, and one that may be sent twice (RFC 9110,
	// 9.2.2) and failed before any answer, for a reason other than
	// slowness. Never another one whose body was read: it may have been
	// processed. A body not asked for proves nothing when the proxy ended
	// the attempt itself or the answer was slow: a handler may be at work
	// on the headers.
	unasked := b != nil && !b.touched() && cause == nil && !isTimeout(err)
	unsent := (isDial(err) || !a.conn.Load() || errors.Is(err, errBounced) || unasked) && (b == nil || b.rewind())
	again := replayable(r) && !isUpgrade(r.Header) && !isTimeout(err)
	switch {
	case a.w.started.Load():
		return outcome{result: ResultUpstreamError} // nothing more can be said
	case (unsent || again) && !errors.Is(cause, errShutdown) && !errors.Is(cause, errStalled):
		return outcome{retry: true, err: err}
	case errors.Is(cause, errLeadershipLost), errors.Is(cause, errLeaderChanged):
		return outcome{result: unavailable(a.w, ResultLeadershipLost,
			"leadership moved while the request was being answered; it may or may not have been processed")}
	case errors.Is(cause, errShutdown):
		return outcome{result: unavailable(a.w, ResultShutdown, "the proxy is shutting down")}
	case errors.Is(cause, errStalled):
		// Closed after this answer: what is left of a stalled body would
		// otherwise hold the connection while net/http waits to discard it.
		a.w.Header().Set("Connection", "close")
		writeError(a.w, http.StatusGatewayTimeout, "the request or its answer made no progress within the body timeout")
		return outcome{result: ResultTimeout}
	case r.Context().Err() != nil:
		return outcome{result: ResultCanceled}
	case isTimeout(err):
		writeError(a.w, http.StatusGatewayTimeout, "no answer within the response timeout")
		return outcome{result: ResultTimeout}
	}
	writeError(a.w, http.StatusBadGateway, "the request could not be forwarded: "+err.Error())
	return outcome{result: ResultUpstreamError}
}

// keepError is ReverseProxy's ErrorHandler: it keeps the error for judge,
// which may still retry, and writes nothing.
func keepError(_ http.ResponseWriter, r *http.Request, err error) { attemptOf(r.Context()).err = err }

// replayable is a request that may be sent twice: no body, and a safe
// method (RFC 9110, 9.2.1), as net/http's transport judges.
func replayable(r *http.Request) bool {
	if r.ContentLength != 0 {
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// modify is ReverseProxy's ModifyResponse: the answer's headers are in.
func (h *httpProxy) modify(res *http.Response) error {
	a := attemptOf(res.Request.Context())
	h.p.rec.Upstream(a.to, h.p.clock.Now().Sub(a.sent))
	if a.to == TargetApp {
		stripElectd(res.Header) // only a peer may say Electd-Not-Leader
	} else if res.StatusCode == http.StatusMisdirectedRequest && res.Header.Get(HeaderNotLeader) != "" {
		return errBounced // judge routes it again; nothing is written
	}
	a.g.done(0) // the application answered: the rest of the body is its business
	if res.StatusCode == http.StatusSwitchingProtocols {
		// The tunnel is the leadership's that took it: the leader's proxy
		// says which, and a follower's proxy cuts the tunnel once a newer
		// one is known (as TCP mode's ack does).
		if a.to == TargetApp {
			res.Header.Set(HeaderFencingToken, strconv.FormatInt(a.route.Token, 10))
		} else if tok, err := strconv.ParseInt(res.Header.Get(HeaderFencingToken), 10, 64); err == nil {
			a.bind(h.p.placedScope(tok))
		}
		a.w.started.Store(true)
		a.g.stop() // the connection's own guard takes over once hijacked
		if a.onTunnel != nil {
			a.onTunnel()
		}
		return nil
	}
	a.g.progress(1)
	res.Body = &upstreamBody{ReadCloser: res.Body, g: a.g}
	return nil
}

func (h *httpProxy) rewriteApp(pr *httputil.ProxyRequest) {
	a := attemptOf(pr.In.Context())
	pr.SetURL(h.appURL)
	forwardedFor(pr)
	pr.Out.Header.Set(HeaderFencingToken, strconv.FormatInt(a.route.Token, 10))
	pr.Out.Header.Set(HeaderLeaderID, a.route.ID)
	expectContinue(pr)
}

func (h *httpProxy) rewritePeer(pr *httputil.ProxyRequest) {
	a := attemptOf(pr.In.Context())
	pr.SetURL(&url.URL{Scheme: "http", Host: a.addr})
	forwardedFor(pr)
	pr.Out.Header.Set(HeaderHop, strconv.Itoa(a.hop))
	pr.Out.Header.Set(HeaderHold, strconv.FormatInt(a.hold.Milliseconds(), 10))
	expectContinue(pr)
}

// expectContinue makes a request with a body wait for the next hop's
// 100 Continue before its body is sent (docs/DESIGN.md, "Forwarding":
// what may be sent again). A peer sends it only when it passes the body
// on, so a request it bounces has read none of it. An application's
// server sends it when the handler first reads the body: net/http's
// once the handler runs, after the check that drops a request read as
// the server's shutdown begins. A connection that ends before the body
// was asked for therefore carried a request no application processed
// (one declared with a body cannot be processed without it), and the
// request goes to the new leader whole, instead of a 502: this is what
// makes an application that stops before its electd lose nothing.
func expectContinue(pr *httputil.ProxyRequest) {
	if pr.In.ContentLength != 0 {
		pr.Out.Header.Set("Expect", "100-continue")
	}
}

// forwardedFor keeps the client's Host and what proxies before this one
// said (a TLS-terminating ingress's X-Forwarded-Proto), and appends the
// client's address to X-Forwarded-For, as ReverseProxy's Director does.
func forwardedFor(pr *httputil.ProxyRequest) {
	in, out := pr.In.Header, pr.Out.Header
	pr.Out.Host = pr.In.Host
	ip, _, err := net.SplitHostPort(pr.In.RemoteAddr)
	if err == nil {
		if prior := in["X-Forwarded-For"]; len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		out.Set("X-Forwarded-For", ip)
	}
	for _, k := range []string{"Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v := in[k]; len(v) > 0 {
			out[k] = v
		}
	}
	if out.Get("X-Forwarded-Host") == "" {
		out.Set("X-Forwarded-Host", pr.In.Host)
	}
	if out.Get("X-Forwarded-Proto") == "" {
		out.Set("X-Forwarded-Proto", "http")
	}
}
