package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/proxy"
)

// Switcher hands leadership to a named participant; *election.Elector
// implements it.
type Switcher interface {
	// Switchover returns election.ErrNotLeader on a follower, an error
	// wrapping ErrNoQueue in race mode or ErrSwitchover (saying why) when
	// the target cannot take over, and ctx's error, still leading, when
	// ctx ends first.
	Switchover(ctx context.Context, to string) error
}

// withSwitchover serves POST /leader/release?to=<id> with sw and hands
// every other release to next: the switchover of docs/design/handover.md,
// "Switchover". Its answers:
//
//   - 202 once this leader has released and to is next in line;
//   - 409 when it cannot: not the leader, race mode (no queue), or the
//     target is unknown, ambiguous, not a candidate, already the leader, or
//     queued behind a participant that cannot re-queue (a Curator peer);
//   - 503 with Retry-After when it did not complete within releaseTimeout.
//     Not 504: electd is no gateway that timed out on an upstream; it is
//     the leader still, the switchover may succeed when asked again, and
//     503 is what a client retries;
//   - 400 for a bad ?to=, 401/403 as for a release.
func withSwitchover(next http.HandlerFunc, el statusReader, sw Switcher, token string, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if _, ok := q["to"]; !ok {
			next(w, r)
			return
		}
		if !admit(w, r, token, log) {
			return
		}
		to, err := switchoverTarget(q)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if sw == nil {
			writeError(w, http.StatusNotImplemented, "this electd cannot hand leadership to a named participant")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), releaseTimeout)
		defer cancel()
		ctx, drained := proxy.ReportDrain(ctx)
		err = sw.Switchover(ctx, to)
		code, msg := switchoverAnswer(err, to, el.Status().IsLeader)
		if code == http.StatusAccepted {
			log.Info("leadership handed over on request", "to", to, "remote", r.RemoteAddr)
			writeJSON(w, code, api.Release{Released: true, ID: el.Status().ID, To: to, Drain: drainOf(drained)})
			return
		}
		log.Warn("POST /leader/release?to= refused", "to", to, "remote", r.RemoteAddr, "code", code, "err", err)
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(int(releaseTimeout.Seconds())))
		}
		writeError(w, code, msg)
	}
}

// switchoverTarget reads ?to=: exactly one participant id, as Validate
// accepts ids (printable UTF-8, at most election.MaxIDBytes).
func switchoverTarget(q url.Values) (string, error) {
	vs := q["to"]
	switch to := vs[0]; {
	case len(vs) > 1:
		return "", badParam{"to", "given more than once"}
	case to == "":
		return "", badParam{"to", "empty; name the participant to hand leadership to"}
	case len(to) > election.MaxIDBytes:
		return "", badParam{"to", strconv.Itoa(len(to)) + " bytes; ids have at most " + strconv.Itoa(election.MaxIDBytes)}
	case !utf8.ValidString(to) || strings.ContainsFunc(to, isControl):
		return "", badParam{"to", strconv.Quote(to) + " is not an id: control character or invalid UTF-8"}
	default:
		return to, nil
	}
}

func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 }

// switchoverAnswer maps Switchover's error to the answer's code and error;
// leading says whether this participant leads after it.
func switchoverAnswer(err error, to string, leading bool) (int, string) {
	still := "; this participant still leads"
	if !leading {
		still = "; this participant no longer leads"
	}
	switch {
	case err == nil:
		return http.StatusAccepted, ""
	case errors.Is(err, election.ErrNotLeader):
		return http.StatusConflict, "not the leader: ask the leader to hand over"
	case errors.Is(err, election.ErrNoQueue):
		return http.StatusConflict, "election.mode race has no queue to hand leadership along; switchover needs latch or selector"
	case errors.Is(err, election.ErrSwitchover):
		return http.StatusConflict, strings.TrimPrefix(err.Error(), "election: ")
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the switchover to " + strconv.Quote(to) +
			" did not complete within " + releaseTimeout.String() + still
	case errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, "the request ended before the switchover completed" + still
	}
	return http.StatusServiceUnavailable, "switchover failed: " + err.Error() + still
}
