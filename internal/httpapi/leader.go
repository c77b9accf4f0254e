package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/election"
)

// statusReader is the view of the election that answers from memory.
type statusReader interface {
	Status() election.Status
}

// newLeaderBody renders st; now stands in for a zero ObservedAt.
func newLeaderBody(st election.Status, now func() time.Time) api.Leader {
	at := st.ObservedAt
	if at.IsZero() {
		at = now()
	}
	b := api.Leader{
		Self: api.Self{
			ID:         st.ID,
			IsLeader:   st.IsLeader,
			State:      string(st.State),
			ObservedAt: at.UTC().Format(time.RFC3339),
			Candidate:  st.Candidate,
		},
		Mode: string(st.Mode),
		Path: st.Path,
	}
	if st.SessionID != 0 {
		b.Self.Session = sessionHex(st.SessionID)
	}
	if l := st.Leader; l != nil {
		b.Leader = &api.LeaderInfo{
			ID:           l.ID,
			Advertise:    l.Advertise,
			Node:         l.Node,
			Session:      sessionHex(l.Session),
			FencingToken: l.FencingToken,
			Proxy:        l.Proxy,
		}
	}
	return b
}

// withProxy adds the forwarding proxy's state, when there is a proxy.
func withProxy(b *api.Leader, px func() *api.ProxyStatus) {
	if px != nil {
		b.Proxy = px()
	}
}

// sessionHex formats a ZooKeeper session id as ZooKeeper does: unsigned hex.
// Ids of servers with myid >= 128 are negative as int64.
func sessionHex(id int64) string {
	return "0x" + strconv.FormatUint(uint64(id), 16)
}

// leader serves GET /leader: who leads, as JSON or as text for scripts.
func leader(el statusReader, now func() time.Time, c Candidacy, kube func() *api.KubeStatus, px func() *api.ProxyStatus) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		text, err := wantsText(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		st := el.Status()
		code := http.StatusOK
		if st.Leader == nil {
			code = http.StatusServiceUnavailable
		}
		if text {
			writeText(w, code, leaderText(st))
			return
		}
		b := newLeaderBody(st, now)
		selfCandidacy(&b.Self, c)
		if kube != nil {
			b.Kubernetes = kube()
		}
		withProxy(&b, px)
		writeJSON(w, code, b)
	}
}

// leaderText is the leader's id and a newline; an empty line when none is
// known. The id comes from a node electd did not write: a Curator peer's,
// or anyone's with write access to the path. An id holding a control
// character or invalid UTF-8 is answered Go-quoted ("a\x1b[2Jb"). So a
// script that reads a line never gets a raw newline or terminal escape. A
// printable id is answered as it is.
func leaderText(st election.Status) string {
	if st.Leader == nil {
		return "\n"
	}
	id := st.Leader.ID
	if !printable(id) {
		id = strconv.Quote(id)
	}
	return id + "\n"
}

// printable reports whether s is valid UTF-8 without control characters
// (C0, DEL, C1) or other runes strconv would escape (e.g. U+2028).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

type badParam struct{ name, msg string }

func (e badParam) Error() string { return e.name + ": " + e.msg }

// wantsText reads ?format= (json or text), else the Accept header: text only
// when the client prefers text/plain strictly over application/json.
//
// The Accept header is negotiated here, not by goautoneg (in the module
// graph through client_golang), because goautoneg gets it wrong:
//   - its sort is no strict weak ordering, so "text/*;q=0.5,
//     application/json;q=0.4" and "*/*, text/plain;q=0.1" pick the range
//     the client likes less;
//   - the answer depends on the order of equal ranges;
//   - q=0 ("not acceptable") still matches;
//   - media types are compared case-sensitively.
//
// See RFC 9110, 8.3.1 and 12.5.1. The cases are in leader_test.go.
func wantsText(r *http.Request) (bool, error) {
	if vs, ok := r.URL.Query()["format"]; ok {
		switch vs[0] {
		case "json":
			return false, nil
		case "text":
			return true, nil
		}
		return false, badParam{"format", strconv.Quote(vs[0]) + " is not a format; use json or text"}
	}
	accept := r.Header.Get("Accept")
	if accept == "" {
		return false, nil
	}
	t := acceptQ(accept, "text", "plain")
	return t > 0 && t > acceptQ(accept, "application", "json"), nil
}

// acceptQ is the quality an Accept header gives typ/sub, or -1 when no
// range matches. The most specific matching range wins (RFC 9110, 12.5.1).
func acceptQ(accept, typ, sub string) float64 {
	best, spec := -1.0, -1
	for part := range strings.SplitSeq(accept, ",") {
		mr, params, _ := strings.Cut(part, ";")
		t, s, _ := strings.Cut(strings.TrimSpace(mr), "/")
		n := -1
		switch {
		case strings.EqualFold(t, typ) && strings.EqualFold(s, sub):
			n = 2
		case strings.EqualFold(t, typ) && s == "*":
			n = 1
		case t == "*" && s == "*":
			n = 0
		}
		if n < 0 || n < spec {
			continue
		}
		q := qParam(params)
		if n > spec || q > best {
			best, spec = q, n
		}
	}
	return best
}

// qParam reads q= from media-range parameters; 1 when absent, 0 when invalid.
func qParam(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || q < 0 || q > 1 {
			return 0
		}
		return q
	}
	return 1
}
