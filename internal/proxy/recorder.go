package proxy

import "time"

// Result says how one request (HTTP mode) or connection ended; it labels
// the metrics (docs/design/proxy.md, "Forwarding").
type Result string

// Results of a request or connection. Which apply to which is listed in
// RequestResults and ConnResults.
const (
	// ResultOK: the application's (or the leader proxy's) answer was
	// relayed; a spliced connection ended on its own.
	ResultOK Result = "ok"
	// ResultNoLeader: no leader to send it to within the hold time: 503
	// with Retry-After, or the connection closed.
	ResultNoLeader Result = "no_leader"
	// ResultAppBusy: 503 after the hold time, the application having its
	// AppMaxInFlight requests all along.
	ResultAppBusy Result = "app_busy"
	// ResultHeldCap: refused at once because MaxHeld requests or
	// connections were already waiting for a leader.
	ResultHeldCap Result = "held_cap"
	// ResultBadRequest: refused for what the client sent (an HTTP 4xx, a
	// peer preamble that does not parse).
	ResultBadRequest Result = "bad_request"
	// ResultUpstreamError: the application or the leader's proxy could not
	// be reached within the hold time, or failed mid-answer (502).
	ResultUpstreamError Result = "upstream_error"
	// ResultTimeout: the application took longer than ResponseTimeout to
	// answer, or a body or write stalled past BodyTimeout (504).
	ResultTimeout Result = "timeout"
	// ResultLeadershipLost: this participant stopped leading while its
	// application had the request or connection, which was cut at once
	// (a stale leader must not keep serving); on a follower, the leader
	// a spliced connection went to changed.
	ResultLeadershipLost Result = "leadership_lost"
	// ResultBounced: a peer forwarded it to this participant, which is not
	// the leadership the forward named, and it went back unprocessed to
	// that peer, which routes it again (HTTP 421 with Electd-Not-Leader
	// and this participant's view; TCP: a connection forwarded twice,
	// refused in the acknowledgement).
	ResultBounced Result = "bounced"
	// ResultMaybeProcessed: the request may have reached an application
	// and cannot be sent again (not safe to repeat, and not provably
	// unprocessed), and its answer did not come: the leader changed, its
	// proxy stopped answering, or the application closed the connection
	// unanswered. 503 (502 from the application) saying so.
	ResultMaybeProcessed Result = "maybe_processed"
	// ResultClientTimeout: the client did not send its headers or its
	// buffered body within their total time (408, or the connection
	// closed).
	ResultClientTimeout Result = "client_timeout"
	// ResultMisdirected: the leader's proxy named another election than
	// this participant's: a misconfiguration (503, logged).
	ResultMisdirected Result = "misdirected"
	// ResultCanceled: the client went away first.
	ResultCanceled Result = "canceled"
	// ResultShutdown: the proxy was shutting down.
	ResultShutdown Result = "shutdown"
	// ResultIdle: a spliced or upgraded connection carried no byte either
	// way for IdleTimeout.
	ResultIdle Result = "idle"
	// ResultRefused: a connection turned away at MaxConnections.
	ResultRefused Result = "refused"
	// ResultEvicted: an HTTP connection closed to make room for a
	// newcomer at MaxConnections: an idle one (a connection result), or
	// one whose buffered body was received slowest (a request result).
	ResultEvicted Result = "evicted"
)

// RequestResults are the results an HTTP request can have, so that every
// label value can be exported before it first happens.
var RequestResults = []Result{ResultOK, ResultNoLeader, ResultHeldCap, ResultBadRequest,
	ResultUpstreamError, ResultTimeout, ResultLeadershipLost, ResultBounced, ResultCanceled, ResultShutdown,
	ResultMaybeProcessed, ResultClientTimeout, ResultEvicted, ResultMisdirected}

// ConnResults are the results a connection can have. HTTP mode counts only
// the connections turned away (refused, evicted); TCP mode counts each.
var ConnResults = []Result{ResultOK, ResultNoLeader, ResultHeldCap, ResultBadRequest,
	ResultUpstreamError, ResultTimeout, ResultLeadershipLost, ResultBounced, ResultCanceled, ResultShutdown,
	ResultIdle, ResultRefused, ResultEvicted}

// Target is where a request or connection was sent.
type Target string

const (
	// TargetApp is the local application (this participant leads).
	TargetApp Target = "app"
	// TargetLeader is the leader's proxy.
	TargetLeader Target = "leader"
)

// Targets lists the targets, for metric labels.
var Targets = []Target{TargetApp, TargetLeader}

// Resend says why a request was sent again (docs/design/proxy.md, "Forwarding":
// what may be sent again).
type Resend string

const (
	// ResendUnprocessed: it provably reached no application (no
	// connection, a refused dial, nothing written, a peer's bounce, a
	// leader whose term ended before its proxy took it).
	ResendUnprocessed Resend = "unprocessed"
	// ResendSafe: the request says it may be repeated (an idempotent
	// method, an Idempotency-Key) and no byte of an answer was relayed.
	ResendSafe Resend = "safe"
	// ResendUnreadBody: the application closed the connection before it
	// asked for the body (Config.ResendUnreadBody).
	ResendUnreadBody Resend = "unread_body"
)

// Resends lists the reasons to send a request again, for metric labels.
var Resends = []Resend{ResendUnprocessed, ResendSafe, ResendUnreadBody}

// Why the proxy asks the election to step down.
const (
	StepDownRefused = "refused" // the application refuses connections
	// StepDownTimeouts: answers timed out, and the proxy's own check of
	// the application then failed AppTimeoutStepDown times in a row.
	StepDownTimeouts = "timeouts"
)

// StepDowns lists why the proxy asks the election to step down, for
// metric labels.
var StepDowns = []string{StepDownRefused, StepDownTimeouts}

// Recorder receives counts of what the proxy did. Methods must not block;
// internal/metrics implements it. A nil Recorder records nothing.
type Recorder interface {
	// Request counts one HTTP request by how it ended.
	Request(res Result)
	// Conn counts one connection by how it ended (see ConnResults).
	Conn(res Result)
	// Forwarded counts one request or connection sent to the leader's
	// proxy carrying hop count hop: 1 from a follower, 2 re-forwarded by
	// a proxy that no longer led when it arrived.
	Forwarded(hop int)
	// Upstream observes how long the target took: to the response
	// headers (HTTP) or to connect (TCP). On loopback it is the latency a
	// forward adds plus the application's own.
	Upstream(to Target, d time.Duration)
	// Held observes how long a request or connection waited for a leader,
	// for those that waited.
	Held(d time.Duration)
	// SteppedDown counts one request to the election to step down, and
	// why (StepDownRefused, StepDownTimeouts).
	SteppedDown(why string)
	// Resent counts one request sent again, and why.
	Resent(why Resend)
	// Attempt counts one attempt to send a request or connection to the
	// application or the leader's proxy: the first and each re-send,
	// probes of a failing route included.
	Attempt(to Target)
	// ResendRefused counts one request that could have been sent again
	// but was answered instead, and the limit that refused it.
	ResendRefused(limit Limit)
}

type nopRecorder struct{}

func (nopRecorder) Request(Result)                 {}
func (nopRecorder) Conn(Result)                    {}
func (nopRecorder) Forwarded(int)                  {}
func (nopRecorder) Upstream(Target, time.Duration) {}
func (nopRecorder) Held(time.Duration)             {}
func (nopRecorder) SteppedDown(string)             {}
func (nopRecorder) Resent(Resend)                  {}
func (nopRecorder) Attempt(Target)                 {}
func (nopRecorder) ResendRefused(Limit)            {}
