package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
)

// awaiter can wait, in memory, for this participant to lead.
type awaiter interface {
	statusReader
	Await(ctx context.Context) (<-chan struct{}, error)
}

// healthz serves GET /healthz: liveness of the daemon's loops. It never
// depends on ZooKeeper or leadership: a restart would not bring ZooKeeper
// back. A first view of the election is /readyz, the startup probe.
func healthz(live func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := live(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, api.Live{Status: "unavailable", Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, api.Live{Status: "ok"})
	}
}

func newLeaderHealthBody(st election.Status) api.LeaderHealth {
	b := api.LeaderHealth{IsLeader: st.IsLeader, Reason: st.Reason}
	if st.IsLeader {
		b.LeaseRemainingMS = max(st.LeaseRemaining.Milliseconds(), 0)
		b.FencingToken = &st.FencingToken
	}
	return b
}

// healthzLeader serves GET /healthz/leader: 200 iff this participant leads
// now. ?wait=<duration> first waits until it leads, at most maxWait.
// Waiting requests are capped by waiters; the probes never wait.
func healthzLeader(el awaiter, maxWait time.Duration, waiters capped) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var wait time.Duration
		if r.URL.RawQuery != "" {
			var err error
			if wait, err = parseWait(r.URL.Query(), maxWait); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
		}
		if wait > 0 && !el.Status().IsLeader {
			done, ok := waiters.enter(w, r)
			if !ok {
				return
			}
			awaitLeader(r.Context(), el, wait)
			done()
			if r.Context().Err() != nil {
				return // the client went away
			}
			extendWrite(w)
		}
		st := el.Status()
		code := http.StatusOK
		if !st.IsLeader {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, newLeaderHealthBody(st))
	}
}

// awaitLeader blocks until el leads, wait passes or ctx ends.
func awaitLeader(ctx context.Context, el awaiter, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_, _ = el.Await(ctx) // any error: the wait is over; Status says the rest
}

// parseWait reads ?wait=: a Go duration with a unit, 0 to maxWait; absent is 0.
func parseWait(q url.Values, maxWait time.Duration) (time.Duration, error) {
	vs, ok := q["wait"]
	if !ok {
		return 0, nil
	}
	s := vs[0]
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, badParam{"wait", strconv.Quote(s) + " needs a unit, e.g. 30s"}
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, badParam{"wait", strconv.Quote(s) + " is not a duration; use e.g. 500ms, 30s or 2m"}
	case d < 0:
		return 0, badParam{"wait", strconv.Quote(s) + " is negative"}
	case d > maxWait:
		return 0, badParam{"wait", strconv.Quote(s) + " is longer than the maximum " + maxWait.String()}
	}
	return d, nil
}

// readyz serves GET /readyz from memory (docs/design/http-contract.md, "HTTP API").
// It answers 200 while this participant is connected, has joined and knows
// who leads. It is the startup probe: the app starts once /leader names
// the leader. Liveness is /healthz.
func readyz(el statusReader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := el.Status()
		b := api.Ready{Joined: st.Joined, State: string(st.State), Node: st.Node, Reason: notReadyReason(st)}
		code := http.StatusServiceUnavailable
		if b.Reason == "" {
			b.Ready, b.Reason, code = true, "joined", http.StatusOK
		}
		writeJSON(w, code, b)
	}
}

// notReadyReason is why st is not ready, or "" when it is.
//
// A participant shutting down is not ready: a restarted container's pod
// (a liveness kill) stays in the Service while electd shuts down, so it
// must leave before the grace ends and its proxy's listener closes.
//
// A participant whose id another live one holds does not stand, so it is
// not ready (docs/design/election-and-lease.md, "Duplicate ids"). A newer
// duplicate pod never becomes ready and a rollout stops at it. The older
// one serves on.
func notReadyReason(st election.Status) string {
	switch {
	case st.State != zksession.StateConnected:
		return "zookeeper " + string(st.State)
	case st.Misconfigured != "":
		return "misconfigured: " + st.Misconfigured
	case st.Why == election.ReasonShuttingDown:
		return "shutting down"
	case st.Why == election.ReasonDuplicateID:
		return st.Reason
	case !st.Joined:
		return "not joined"
	case !st.IsLeader && st.Leader == nil:
		return "no leader known yet"
	}
	return ""
}
