package httpapi

import (
	"net/http"
	"strconv"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/history"
)

// HistoryReader is the daemon's record of recent transitions
// (*history.Log).
type HistoryReader interface {
	// Last returns the newest n entries, oldest first; all when n < 1.
	Last(n int) []history.Entry
}

// historyHandler serves GET /history: the last transitions as a JSON array,
// newest last, as Patroni's /history. ?limit=N returns the newest N only.
func historyHandler(h HistoryReader) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit, err := parseLimit(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		entries := h.Last(limit)
		out := make([]api.HistoryEntry, 0, len(entries))
		for _, e := range entries {
			out = append(out, newHistoryJSON(e))
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// parseLimit reads ?limit=, a positive integer; 0 (all) when absent. A
// limit above what the log holds returns all of it.
func parseLimit(r *http.Request) (int, error) {
	vs, ok := r.URL.Query()["limit"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(vs[0])
	if err != nil || n < 1 {
		return 0, badParam{"limit", strconv.Quote(vs[0]) + " is not a number of entries; use a positive integer"}
	}
	return n, nil
}

func newHistoryJSON(e history.Entry) api.HistoryEntry {
	j := api.HistoryEntry{
		Seq:       e.Seq,
		Time:      e.Time.UTC().Format(api.TimeMillis),
		Kind:      string(e.Kind),
		Reason:    e.Reason,
		State:     string(e.State),
		Candidate: e.Candidate,
		Session:   sessionHex(e.Session),
	}
	if e.HasLeader {
		id := e.LeaderID
		j.Leader = &id
	}
	if e.HasToken {
		tok := e.FencingToken
		j.FencingToken = &tok
	}
	return j
}
