package httpapi

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/electd/electd/internal/api"
)

// The status page as the server draws it (GET / without JavaScript, or
// before the script has read anything). Each text is what ui/app.js shows
// for the same JSON; the template (ui/index.html) escapes every one.
type pageView struct {
	Title, Election string
	AsOf            string // when the values were read, for the connection line
	Leader          leaderView
	Self            selfView
	// Proxy is set when this participant runs a forwarding proxy.
	Proxy                  *proxyView
	QueueNote, HistoryNote string
	Queue                  []queueRow
	History                []historyRow
}

type leaderView struct {
	Known                           bool
	ID, Token, Advertise, Node, Via string
}

type selfView struct {
	ID, Role, Reason, State, Candidate, Session string
	IsLeader                                    bool
	// LeaseMS and LeaseMaxMS draw the lease bar; LeaseText says it.
	LeaseMS, LeaseMaxMS int64
	LeaseText           string
}

type proxyView struct{ Route, Text string }

type queueRow struct {
	N, ID, Advertise, Role, Token, Session string
	IsLeader                               bool
}

type historyRow struct {
	Seq, Kind, DateTime, Time, Leader, Token, Reason, State string
}

// Bounds of what the server draws. The page must not grow with the
// election, nor with what a participant wrote into its node.
const (
	// queueShown rows of the queue; the note counts the rest (ui/app.js's
	// QUEUE_SHOWN).
	queueShown = 50
	// historyShown transitions (ui/app.js's HISTORY_SHOWN).
	historyShown = 20
	// maxShownBytes of each value read from ZooKeeper (ids, addresses).
	// A Kubernetes pod name has at most 253 bytes. The script shows the
	// whole value once it runs.
	maxShownBytes = 256
)

const dash = "–"

// clip cuts s to maxShownBytes at a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= maxShownBytes {
		return s
	}
	n := maxShownBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func orDash(s string) string {
	if s == "" {
		return dash
	}
	return clip(s)
}

func tokenText(t *int64) string {
	if t == nil {
		return dash
	}
	return strconv.FormatInt(*t, 10)
}

// newPageView draws the page from the answers of /leader (l),
// /healthz/leader (h), /participants (ps) and /history (hs). psErr and
// hsErr say why a list could not be read.
func newPageView(l api.Leader, h api.LeaderHealth, sessionTimeout time.Duration, ps []api.Participant, psErr string,
	hs []api.HistoryEntry, hsErr string, now time.Time) pageView {
	v := pageView{
		Title: "electd: no leader known",
		AsOf:  now.UTC().Format(time.TimeOnly),
		Leader: leaderView{
			ID: "none known", Token: dash, Advertise: dash, Node: dash, Via: dash,
		},
		Self:        newSelfView(l.Self, h, sessionTimeout),
		QueueNote:   queueNote(ps, psErr),
		HistoryNote: "Newest first, as this participant saw them.",
	}
	if l.Path != "" {
		v.Election = clip(l.Path) + " (" + l.Mode + ")"
	}
	if li := l.Leader; li != nil {
		v.Title = "electd: " + clip(li.ID) + " leads"
		v.Leader = leaderView{
			Known: true, ID: clip(li.ID), Token: strconv.FormatInt(li.FencingToken, 10),
			Advertise: orDash(li.Advertise), Node: clip(li.Node), Via: orDash(li.Proxy),
		}
	}
	if p := l.Proxy; p != nil {
		v.Proxy = &proxyView{Route: p.Route, Text: proxyText(p)}
	}
	for i, p := range ps[:min(len(ps), queueShown)] {
		v.Queue = append(v.Queue, newQueueRow(i, p, l.Self.ID))
	}
	if hsErr != "" {
		v.HistoryNote = "Cannot read /history: " + hsErr
	}
	for i := len(hs) - 1; i >= 0 && len(v.History) < historyShown; i-- {
		v.History = append(v.History, newHistoryRow(hs[i]))
	}
	return v
}

// newSelfView is app.js's renderSelf and drawLease. The lease bar's full
// length is the session timeout, which no lease exceeds.
func newSelfView(s api.Self, h api.LeaderHealth, sessionTimeout time.Duration) selfView {
	v := selfView{
		ID: clip(s.ID), Role: "follower", Reason: clip(h.Reason), State: s.State, Candidate: "no",
		Session: "none yet", IsLeader: s.IsLeader, LeaseMaxMS: 1, LeaseText: "none (not leading)",
	}
	if s.IsLeader {
		v.Role = "leader"
	}
	if !s.Candidate {
		v.Role = "observer (not a candidate)"
	}
	if s.Candidate {
		v.Candidate = "yes"
	}
	if s.AppHealthy != nil && *s.AppHealthy {
		v.Candidate += " (application healthy)"
	}
	if s.AppHealthy != nil && !*s.AppHealthy {
		v.Candidate += " (application unhealthy)"
	}
	if s.Session != "" {
		v.Session = s.Session
	}
	if h.IsLeader {
		left := h.LeaseRemainingMS
		v.LeaseMS, v.LeaseMaxMS = left, max(sessionTimeout.Milliseconds(), left, 1)
		v.LeaseText = "ran out: waiting for a renewal"
		if left > 0 {
			v.LeaseText = strconv.FormatFloat(float64(left)/1000, 'f', 1, 64) + " s left"
		}
	}
	return v
}

// proxyText is app.js's renderProxy.
func proxyText(p *api.ProxyStatus) string {
	where := "holding: no leader to send to yet"
	switch p.Route {
	case "app":
		where = "to its application at " + clip(p.To)
	case "leader":
		where = "to the leader's proxy at " + clip(p.To)
	}
	return p.Mode + " at " + p.Advertise + ", " + where + "; " + strconv.Itoa(p.Held) + " held, " +
		strconv.Itoa(p.InFlight) + " with the application, " + strconv.Itoa(p.Connections) + " connections"
}

// queueNote is app.js's readQueue's note.
func queueNote(ps []api.Participant, psErr string) string {
	if psErr != "" {
		return "Cannot read the queue: " + psErr
	}
	var b strings.Builder
	b.WriteString("In queue order: the first participant leads. ")
	b.WriteString(strconv.Itoa(len(ps)) + " participant")
	if len(ps) != 1 {
		b.WriteString("s")
	}
	if len(ps) > queueShown {
		b.WriteString("; the first " + strconv.Itoa(queueShown) + " shown, all at /participants")
	}
	b.WriteString(".")
	return b.String()
}

func newQueueRow(i int, p api.Participant, self string) queueRow {
	r := queueRow{
		N: strconv.Itoa(i + 1), ID: clip(p.ID), Advertise: orDash(p.Advertise), Role: "follower",
		Token: tokenText(p.FencingToken), Session: p.Session, IsLeader: p.IsLeader,
	}
	if p.IsLeader {
		r.Role = "leader"
	}
	if p.ID == self {
		r.Role += " (this electd)"
	}
	return r
}

func newHistoryRow(e api.HistoryEntry) historyRow {
	r := historyRow{
		Seq: strconv.FormatUint(e.Seq, 10), Kind: e.Kind, DateTime: e.Time,
		Time:   strings.Replace(strings.Replace(e.Time, "T", " ", 1), "Z", "", 1),
		Leader: "none", Token: tokenText(e.FencingToken), Reason: clip(e.Reason), State: e.State,
	}
	if e.Leader != nil {
		r.Leader = clip(*e.Leader)
	}
	if !e.Candidate {
		r.State += ", not a candidate"
	}
	return r
}
