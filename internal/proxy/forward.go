package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// A request over its attempts (docs/design/proxy.md, "Forwarding"): each
// hand-over is an attempt (attempt.go), judged by what it learnt
// (resend.go): answered, sent again, or answered by the proxy.

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

// forward hands q to the application (this participant leads) or to the
// leader's proxy, in one attempt (attempt.go), and judges what came of it.
func (h *httpProxy) forward(q *exchange, d decision) outcome {
	a := h.newAttempt(q, d)
	defer a.end()
	q.last = a.ctx
	a.run()
	return h.judge(a)
}

// judge turns what ReverseProxy reported into an outcome, answering the
// client unless the request is to be sent again or an answer is under way.
func (h *httpProxy) judge(a *attempt) outcome {
	p, q := h.p, a.q
	err := a.err
	if err == nil {
		return outcome{result: ResultOK}
	}
	cause := context.Cause(a.ctx)
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
	return outcome{result: h.fail(a, f), err: err, failed: failed, moot: moot}
}

// fail answers a request that is not sent again, and returns its result.
func (h *httpProxy) fail(a *attempt, f facts) Result {
	p, w := h.p, a.q.w
	err, cause := a.err, context.Cause(a.ctx)
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

// mayResend says whether q is sent again for why, and after how long:
// a request that provably reached no application at once (the route's
// probe paces it); else within maxResends, what is left of its hold
// time, and the budget. A refusal is counted.
func (p *Proxy) mayResend(q *exchange, why Resend) (time.Duration, bool) {
	if why == ResendUnprocessed {
		return 0, true
	}
	refuse := func(l Limit) (time.Duration, bool) { p.rec.ResendRefused(l); return 0, false }
	if q.resends >= maxResends {
		return refuse(LimitPerRequest)
	}
	wait := resendBackoff(q.resends, p.jitter)
	if wait >= q.hd.remaining() {
		return refuse(LimitHold)
	}
	if !p.budget.withdraw() {
		return refuse(LimitBudget)
	}
	q.resends++
	return wait, true
}
