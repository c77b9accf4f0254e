package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
)

// A client's request on its way through the proxy it came to
// (docs/design/proxy.md, "Forwarding"): admitted (its Electd-* headers gone, the
// forwarding headers and its id set), its body buffered or streamed,
// routed, held, handed over, judged, sent again when that is allowed.

func (h *httpProxy) serveClient(rw http.ResponseWriter, r *http.Request) {
	h.active.Add(1)
	defer h.active.Done()
	p := h.p
	q := newExchange(p, rw, r, p.cfg.HoldTime)
	w := q.w
	if !checkFraming(w, r, p.rec) {
		return
	}
	defer framingDone(r)
	if optionsStar(w, r) {
		return
	}
	if r.Method == http.MethodConnect {
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE")
		writeError(w, http.StatusMethodNotAllowed, "CONNECT: this is a reverse proxy to the leader, not a forward proxy")
		p.rec.Request(ResultBadRequest)
		return
	}
	// The client's port never takes a forward: whatever Electd-* headers
	// a client sends are its own, and go (admit), in trailers too.
	dropH2CUpgrade(r.Header)
	guardTrailers(r)
	q.h2, q.id = r.ProtoMajor == 2, admit(r, p.cfg.trusted)
	res := ResultUpstreamError // kept if ReverseProxy aborts an answer broken off mid-body (a panic)
	defer h.finish(q, &res)
	if hasBody(r) {
		if h.shouldBuffer(r) {
			if q.b, res = h.buffer(w, r, q.hd); q.b == nil {
				return
			}
		} else {
			q.b = h.stream(rw, r)
		}
		defer q.b.release()
		r.Body, r.GetBody = q.b, q.b.again
	}
	res = h.route(q)
	if res == ResultCanceled {
		// Never the implicit 200 net/http writes for a handler that wrote
		// nothing; a client that went away does not read it anyway.
		unavailable(w, res, "the request was canceled")
	}
}

// stream watches a body that is not buffered: it is sent as it arrives.
func (h *httpProxy) stream(rw http.ResponseWriter, r *http.Request) *reqBody {
	// A stream both ways (an echo, gRPC) must not wait for the request's
	// end before its answer starts, which net/http's HTTP/1 server does by
	// default.
	_ = http.NewResponseController(rw).EnableFullDuplex()
	size := r.ContentLength
	if len(r.Trailer) > 0 {
		size = -1 // the trailers come at the end, which a copy would not read
	}
	return newBody(watchFraming(r), size, &h.p.kept)
}

// route sends q where decide says, holding it while there is nowhere to
// send it and sending it again when that is allowed, within the hold time.
func (h *httpProxy) route(q *exchange) Result {
	return h.send(q, func() decision { return h.p.decide(0, true) }, nil)
}

// send is route's and take's one loop: it sends q where next decides,
// holds it while there is nowhere to send it, and sends it again when that
// is allowed, within q's hold time. gate, when given, sees each decision
// first and may answer q itself (take's bounce). A route that failed is
// tried by its probe alone: q waits for the probe's outcome (probe.go).
func (h *httpProxy) send(q *exchange, next func() decision, gate func(decision) (Result, bool)) Result {
	p := h.p
	p.budget.deposit()
	why := ""
	var t ticket // the route's leave to send, or to wait (probe.go)
	defer func() { t.abandon() }()
	for {
		wake := p.wake.Changed()
		d := next()
		if d.way == toApp || d.way == toLeader {
			if t = p.probe.acquire(keyOf(d), t); !t.ok {
				if d.way == toApp {
					p.appDone() // decide counted it in flight
				}
				w := wait{wake: wake, ready: t.changed, retry: t.after, why: why, upstream: why != ""}
				if t.err != nil {
					w.why, w.upstream = refusal(d, t.err), true
					why = w.why
				}
				if res, ok := h.hold(q, w); !ok {
					return res
				}
				continue
			}
		}
		if gate != nil {
			if res, done := gate(d); done {
				return res
			}
		}
		w := wait{wake: wake, why: d.why, busy: d.busy}
		switch d.way {
		case toNone:
			return unavailable(q.w, ResultShutdown, "the proxy is shutting down")
		case toApp, toLeader:
			q.hd.leave()
			if d.way == toLeader {
				q.watchClient() // the leader's proxy may hold it too
			}
			o := h.forward(q, d)
			if o.moot {
				t.abandon()
			} else {
				t.done(!o.failed, o.err)
			}
			t = ticket{}
			if o.again && d.way == toApp && errors.Is(o.err, syscall.ECONNREFUSED) {
				p.stepDown(d.route, StepDownRefused, o.err)
			}
			switch {
			case !o.again:
				return o.result
			case o.now:
				continue
			case o.failed:
				// acquire waits for the route's probe; why the route
				// failed is what the answer names if the hold runs out.
				why = refusal(d, o.err)
				continue
			}
			w.retry, w.why, w.upstream = max(o.wait, resendFirst/2), refusal(d, o.err), true
			if errors.Is(o.err, errHoldExpired) && why != "" {
				w.why = why // what kept it from going anywhere in time
			}
		}
		why = w.why
		if res, ok := h.hold(q, w); !ok {
			return res
		}
	}
}

// hold waits as w says, within what is left of q's hold time; false with
// the result when the request is answered.
func (h *httpProxy) hold(q *exchange, w wait) (Result, bool) {
	p := h.p
	q.watchClient()
	if !q.hd.enter() {
		return unavailable(q.w, ResultHeldCap, fmt.Sprintf("too many requests wait for a leader (the limit is %d)", p.cfg.MaxHeld)), false
	}
	switch err := q.hd.wait(q.r.Context(), w.wake, w.ready, w.retry); {
	case err == nil:
		return "", true
	case errors.Is(err, errHoldExpired) && w.busy:
		return unavailable(q.w, ResultAppBusy, fmt.Sprintf("the application took no more requests within the hold time (%v): %s", p.cfg.HoldTime, w.why)), false
	case errors.Is(err, errHoldExpired):
		res := ResultNoLeader
		if w.upstream {
			res = ResultUpstreamError
		}
		return unavailable(q.w, res, fmt.Sprintf("no leader to send the request to within the hold time (%v): %s", p.cfg.HoldTime, w.why)), false
	case errors.Is(err, errShutdown):
		return unavailable(q.w, ResultShutdown, "the proxy is shutting down"), false
	}
	return ResultCanceled, false // the client went away
}

// refusal says why a request held after d's target failed is answered
// 503 if its hold runs out.
func refusal(d decision, err error) string {
	return fmt.Sprintf("%s did not take it (%v)", targetName(d), err)
}

func targetName(d decision) string {
	if d.way == toApp {
		return "the application"
	}
	return fmt.Sprintf("the leader %q's proxy at %s", d.route.ID, d.route.Addr)
}

// finish records how q ended and, at debug level, why when it did not end
// in an answer: an answer broken off (ReverseProxy's ErrAbortHandler
// panic, which net/http recovers silently) included.
func (h *httpProxy) finish(q *exchange, res *Result) {
	q.hd.done()
	h.p.rec.Request(*res)
	h.p.served.Add(1)
	v := recover()
	if *res != ResultOK || v != nil {
		h.p.log.Debug("request ended without the application's answer", "request_id", q.id, "peer", q.peer,
			"method", q.r.Method, "result", *res, "answer_started", q.w.started.Load(), "cut", v != nil,
			"took", h.p.clock.Now().Sub(q.hd.start), "cause", causeOf(q.last))
	}
	if v != nil {
		panic(v)
	}
}

func causeOf(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return context.Cause(ctx)
}
