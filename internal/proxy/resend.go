package proxy

// What may be sent again (docs/design/proxy.md, "Forwarding"); how often, and
// when, is retry.go's and probe.go's. A request is sent again, wherever the route says now, only
// when it provably reached no application, or when it says it may be
// repeated and nothing of its answer was relayed yet. The rule is a pure
// function of what an attempt learnt, so that it is tested as a table.

// facts are what one attempt learnt about how far its request got.
type facts struct {
	// started: a byte of an answer was relayed to the client; nothing
	// else can be written.
	started bool
	// bodyAgain: the body can be sent again whole (none, buffered, or
	// none of it read yet).
	bodyAgain bool
	// shutdown: the proxy is shutting down.
	shutdown bool

	// What proves the request reached no application:
	// noConn: no connection was had (a dial refused or failed, a peer's
	// proxy that did not answer a ping on a new connection, a peer at its
	// stream cap).
	noConn bool
	// unwritten: a connection was had but it took nothing of the request
	// (HTTP/2's REFUSED_STREAM, a GOAWAY that names an earlier stream, a
	// connection found unusable before the request was sent, an HTTP/1
	// connection the application had closed before the request's first
	// byte was written: appconn.go).
	unwritten bool
	// bounced: the peer's proxy answered 421: it is not the leadership
	// the forward named, and handed nothing to its application.
	bounced bool
	// toPeer, taken and termEnded: sent to a peer's proxy, which had not
	// said it took it (its 102) when this participant learnt of a newer
	// leader and pinged it: the ping's answer came after all it wrote
	// before, and a proxy takes nothing once its lease ended, which it has
	// when a newer leader is known.
	toPeer, taken, termEnded bool
	// unreadBody: the application closed the connection before it asked
	// for the body, and Config.ResendUnreadBody says that proves it did
	// nothing.
	unreadBody bool

	// safe: an idempotent method or an Idempotency-Key.
	safe bool
	// slow: the attempt ended because the answer or a body was too slow:
	// sending it again would only be as slow.
	slow bool
}

// resendable says whether a failed attempt's request is sent again, and
// why; false means it gets an answer now (503, 502 or 504).
func resendable(f facts) (Resend, bool) {
	switch {
	case f.started, f.shutdown, !f.bodyAgain:
		return "", false
	case f.noConn, f.unwritten, f.bounced, f.toPeer && !f.taken && f.termEnded:
		return ResendUnprocessed, true
	case f.unreadBody:
		return ResendUnreadBody, true
	case f.safe && !f.slow:
		return ResendSafe, true
	}
	return "", false
}
