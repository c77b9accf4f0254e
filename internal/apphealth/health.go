package apphealth

import "time"

// State is the application's health as the thresholds decide it.
type State int

const (
	// Unknown: not yet successThreshold passes in a row, nor
	// failureThreshold failures, since the start.
	Unknown State = iota
	Healthy
	Unhealthy
)

func (s State) String() string {
	switch s {
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	}
	return "unknown"
}

// Result is one check's outcome; its values label
// electd_app_health_checks_total.
type Result string

const (
	Success Result = "success" // an HTTP answer from 200 to 399
	Failure Result = "failure" // an HTTP answer of 400 or more (or below 200)
	Timeout Result = "timeout" // no full answer within the timeout
	Error   Result = "error"   // no answer: refused, reset, a bad TLS handshake
)

// Results are every Result, for metrics that export each from the start.
var Results = []Result{Success, Failure, Timeout, Error}

// Health is what the checker knows: the state, the last outcome in words,
// and when the state last changed.
type Health struct {
	State State
	// Detail is the last check's outcome, empty before the first. E.g.
	// "HTTP 200 OK" or "dial tcp 127.0.0.1:8080: connect: connection refused".
	Detail string
	// Since is the wall-clock time of the last change of State (the start
	// for Unknown).
	Since time.Time
}

// tally applies the thresholds to a run of results, as the Kubernetes
// prober does. It counts consecutive equal outcomes. The state changes
// once a run reaches its threshold.
type tally struct {
	failureThreshold, successThreshold int

	state State
	pass  bool // the current run's outcome
	run   int  // its length
	// trial: the state is Healthy on trust (Config.Resumed) until the
	// first check, which alone decides.
	trial bool
}

// add counts one outcome and reports whether the state changed.
func (t *tally) add(pass bool) bool {
	if t.run == 0 || pass != t.pass {
		t.pass, t.run = pass, 0
	}
	t.run++
	next := t.state
	switch {
	case t.trial:
		t.trial, next = false, Unhealthy
		if pass {
			next = Healthy
		}
	case pass && t.run >= t.successThreshold:
		next = Healthy
	case !pass && t.run >= t.failureThreshold:
		next = Unhealthy
	}
	changed := next != t.state
	t.state = next
	return changed
}
