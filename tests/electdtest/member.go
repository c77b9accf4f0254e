package electdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/wait"
)

// AdminToken is http.admin_token of the participants StartMember starts.
const AdminToken = "e2e-token"

// requestTimeout bounds one request of a Member.
const requestTimeout = 5 * time.Second

// Member is a running electd bound to its test: a request that gets no
// answer within requestTimeout answers status 0, and what a test cannot go
// on without (a signal, an exit, a body it reads) fails the test.
type Member struct {
	*Proc
	t testing.TB
}

// Bind binds p to t.
func Bind(t testing.TB, p *Proc) *Member { return &Member{Proc: p, t: t} }

// StartT is Start, bound to t.
func StartT(t testing.TB, s Spec) *Member {
	t.Helper()
	return Bind(t, Start(t, s))
}

// StartArgs is StartT with args and env alone; addr is where the process
// serves HTTP (args say so).
func StartArgs(t testing.TB, id, addr string, args, env []string) *Member {
	t.Helper()
	return StartT(t, Spec{Name: id, Addr: addr, Args: args, Env: env})
}

// MemberArgs are the flags of one participant of an election at path on
// the ZooKeeper ensemble zk, serving HTTP at addr with AdminToken.
func MemberArgs(zk, path, id, mode, addr string, extra ...string) []string {
	return append([]string{
		"--id", id, "--advertise", addr, "--zookeeper.servers", zk, "--zookeeper.session_timeout", "4s",
		"--election.path", path, "--election.mode", mode, "--http.addr", addr,
		"--http.admin_token", AdminToken,
	}, extra...)
}

// StartMember runs one participant configured by MemberArgs and extra,
// logging at debug level.
func StartMember(t testing.TB, zk, path, id, mode string, extra ...string) *Member {
	t.Helper()
	addr := MustFreeAddr(t)
	args := MemberArgs(zk, path, id, mode, addr, append([]string{"--log.level", "debug"}, extra...)...)
	return StartT(t, Spec{Name: id, Addr: addr, Args: args})
}

// MustFreeAddr is FreeAddr, failing t.
func MustFreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Send sends sig to the process, failing the test when it has exited.
func (m *Member) Send(sig syscall.Signal) {
	m.t.Helper()
	if err := m.Signal(sig); err != nil {
		m.t.Fatalf("%s: signal %v: %v", m.Name, sig, err)
	}
}

// WaitExit returns the exit error once the process has exited (nil for
// status 0), failing the test if it does not exit within timeout.
func (m *Member) WaitExit(timeout time.Duration) error {
	m.t.Helper()
	err, ok := m.Wait(timeout)
	if !ok {
		m.t.Fatalf("%s did not exit within %v", m.Name, timeout)
	}
	return err
}

// Request sends one request with token (none when ""); status 0 means no
// answer.
func (m *Member) Request(method, path, token string) (int, []byte) {
	return m.RequestBody(method, path, token, "")
}

// RequestBody is Request with a body.
func (m *Member) RequestBody(method, path, token, body string) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	st, b, err := m.DoBody(ctx, method, path, token, body)
	if err != nil {
		return 0, nil
	}
	return st, b
}

// Post is RequestBody with POST.
func (m *Member) Post(path, token, body string) (int, []byte) {
	return m.RequestBody(http.MethodPost, path, token, body)
}

// Fetch is Request with GET and no token.
func (m *Member) Fetch(path string) (int, []byte) { return m.Request(http.MethodGet, path, "") }

// Leads reports whether /healthz/leader answers 200.
func (m *Member) Leads() bool {
	st, _ := m.Fetch("/healthz/leader")
	return st == http.StatusOK
}

// LeaderNow reads GET /leader; an answer other than 200 is an error.
func (m *Member) LeaderNow() (LeaderView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return m.View(ctx)
}

// Body reads GET path as JSON into v whatever the status among ok (200
// when none is given), failing the test on any other answer.
func (m *Member) Body(path string, v any, ok ...int) {
	m.t.Helper()
	if len(ok) == 0 {
		ok = []int{http.StatusOK}
	}
	st, b := m.Fetch(path)
	if !slices.Contains(ok, st) {
		m.t.Fatalf("%s: GET %s: %d %s", m.Name, path, st, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		m.t.Fatalf("%s: GET %s: %v: %s", m.Name, path, err, b)
	}
}

// Leader reads /leader whatever its status (503 when no leader is known).
func (m *Member) Leader() api.Leader {
	m.t.Helper()
	var v api.Leader
	m.Body("/leader", &v, http.StatusOK, http.StatusServiceUnavailable)
	return v
}

// Queue reads GET /participants: nil when it does not answer 200.
func (m *Member) Queue() []api.Participant {
	m.t.Helper()
	st, b := m.Fetch("/participants")
	if st != http.StatusOK {
		return nil
	}
	var out []api.Participant
	if err := json.Unmarshal(b, &out); err != nil {
		m.t.Fatalf("%s: GET /participants: %v: %s", m.Name, err, b)
	}
	return out
}

// Reason is /healthz/leader's reason.
func (m *Member) Reason() string {
	_, b := m.Fetch("/healthz/leader")
	var v api.LeaderHealth
	_ = json.Unmarshal(b, &v)
	return v.Reason
}

// Candidacy reads GET /candidacy.
func (m *Member) Candidacy() api.Candidacy {
	m.t.Helper()
	var v api.Candidacy
	m.Body("/candidacy", &v)
	return v
}

// HealthNow asks /healthz/leader of a live process once; ok is false
// without an answer.
func (m *Member) HealthNow() (Health, bool) {
	if !m.Alive() {
		return Health{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	h, err := m.LeaderHealth(ctx)
	return h, err == nil
}

// MetricValue reads one series of name from /metrics; labels, in pairs,
// select among several series (none: their sum).
func (m *Member) MetricValue(name string, labels ...string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	mfs, err := m.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	if len(labels) == 0 {
		return Value(mfs, name)
	}
	if mf, ok := mfs[name]; ok {
		for _, s := range mf.GetMetric() {
			if !hasLabels(s.GetLabel(), labels) {
				continue
			}
			switch {
			case s.Counter != nil:
				return s.GetCounter().GetValue(), nil
			case s.Gauge != nil:
				return s.GetGauge().GetValue(), nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no %s%v", m.Name, name, labels)
}

// hasLabels reports whether ls has every name-value pair of want.
func hasLabels(ls []*dto.LabelPair, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		if !slices.ContainsFunc(ls, func(l *dto.LabelPair) bool { return l.GetName() == want[i] && l.GetValue() == want[i+1] }) {
			return false
		}
	}
	return true
}

// MetricOf is MetricValue, failing the test when the series is missing.
func (m *Member) MetricOf(name string, labels ...string) float64 {
	m.t.Helper()
	v, err := m.MetricValue(name, labels...)
	if err != nil {
		m.t.Fatal(err)
	}
	return v
}

// LogCount counts the occurrences of s in the process's log.
func (m *Member) LogCount(s string) int {
	b, _ := os.ReadFile(m.LogPath)
	return strings.Count(string(b), s)
}

// OneLeader waits until exactly one of ms answers 200 on /healthz/leader
// and every live one names it on /leader, and returns it. Two leaders at
// once fail the test: one that answered 200 and, asked again after
// another did, still answers 200 with the same fencing token (what two
// questions one after the other can prove).
func OneLeader(t testing.TB, ms []*Member, timeout time.Duration) *Member {
	t.Helper()
	var leader *Member
	wait.For(t, timeout, "exactly one leader", func() bool {
		var ls []*Member
		var tokens []int64
		for _, m := range ms {
			if h, ok := m.HealthNow(); ok && h.IsLeader {
				ls = append(ls, m)
				tokens = append(tokens, h.FencingToken)
			}
		}
		if len(ls) > 1 {
			if h, ok := ls[0].HealthNow(); ok && h.IsLeader && h.FencingToken == tokens[0] {
				t.Fatalf("%s (token %d) and %s (token %d) lead at once", ls[0].Name, tokens[0], ls[1].Name, tokens[1])
			}
			return false
		}
		if len(ls) != 1 {
			return false
		}
		// Settled: every live participant names it, so what a test does
		// next starts from one agreed view.
		for _, m := range ms {
			if !m.Alive() {
				continue
			}
			if v, err := m.LeaderNow(); err != nil || v.LeaderID() != ls[0].Name {
				return false
			}
		}
		leader = ls[0]
		return true
	})
	return leader
}

// Leaders lists the live members that answer 200 on /healthz/leader; more
// than one fails the test.
func Leaders(t testing.TB, ms []*Member) []*Member {
	t.Helper()
	var ls []*Member
	for _, m := range ms {
		if m.Alive() && m.Leads() {
			ls = append(ls, m)
		}
	}
	if len(ls) > 1 {
		t.Fatalf("%s and %s both answer 200 on /healthz/leader", ls[0].Name, ls[1].Name)
	}
	return ls
}

// NobodyLeads waits until no member leads and every one says so on
// /leader ("leader": null).
func NobodyLeads(t testing.TB, ms []*Member, timeout time.Duration) {
	t.Helper()
	wait.For(t, timeout, "nobody to lead", func() bool {
		if len(Leaders(t, ms)) > 0 {
			return false
		}
		for _, m := range ms {
			if m.Leader().Leader != nil {
				return false
			}
		}
		return true
	})
}

// WaitOK waits until each of ms answers 200 on GET path, failing the test
// when one exits first or after timeout: /healthz once it serves, /readyz
// once it has a view of the election (the startup probe of
// deploy/k8s/app.yaml).
func WaitOK(t testing.TB, path string, timeout time.Duration, ms ...*Member) {
	t.Helper()
	for _, m := range ms {
		wait.For(t, timeout, m.Name+" "+path, func() bool {
			if !m.Alive() {
				t.Fatalf("%s exited: %v", m.Name, m.ExitErr())
			}
			st, _ := m.Fetch(path)
			return st == http.StatusOK
		})
	}
}

// StartThree starts three participants, p0 to p2, on one path and waits
// until they serve.
func StartThree(t testing.TB, zk, path, mode string, extra ...string) []*Member {
	t.Helper()
	var ms []*Member
	for i := range 3 {
		ms = append(ms, StartMember(t, zk, path, fmt.Sprintf("p%d", i), mode, extra...))
	}
	WaitOK(t, "/healthz", 30*time.Second, ms...)
	return ms
}

// Others is ms without not.
func Others(ms []*Member, not *Member) []*Member {
	var out []*Member
	for _, m := range ms {
		if m != not {
			out = append(out, m)
		}
	}
	return out
}

// ByID is the member named id, or nil.
func ByID(ms []*Member, id string) *Member {
	for _, m := range ms {
		if m.Name == id {
			return m
		}
	}
	return nil
}

// CheckAgreement waits until every member's /leader names leader with one
// fencing token, and checks electd_is_leader on each.
func CheckAgreement(t testing.TB, ms []*Member, leader *Member) {
	t.Helper()
	var views []LeaderView
	wait.For(t, 10*time.Second, "/leader to agree on "+leader.Name, func() bool {
		views = views[:0]
		for _, m := range ms {
			v, err := m.LeaderNow()
			if err != nil || v.Leader == nil || v.Leader.ID != leader.Name {
				return false
			}
			views = append(views, v)
		}
		return true
	})
	for i, v := range views {
		if v.Leader.FencingToken != views[0].Leader.FencingToken || v.Leader.FencingToken <= 0 {
			t.Errorf("%s: fencing token %d, %s says %d", ms[i].Name, v.Leader.FencingToken, ms[0].Name, views[0].Leader.FencingToken)
		}
		if v.Self.IsLeader != (ms[i] == leader) {
			t.Errorf("%s: self.is_leader = %v", ms[i].Name, v.Self.IsLeader)
		}
	}
	for _, m := range ms {
		want := 0.0
		if m == leader {
			want = 1
		}
		if got, err := m.MetricValue("electd_is_leader"); err != nil || got != want {
			t.Errorf("%s: electd_is_leader = %v (%v), want %v", m.Name, got, err, want)
		}
	}
}
