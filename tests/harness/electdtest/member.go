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
