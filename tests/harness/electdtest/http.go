package electdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/wait"
)

// maxBody bounds what the helpers read of an answer.
const maxBody = 4 << 20

// Do sends one request (with "Authorization: Bearer token" unless token is "") and
// returns the status and body. An error means no answer.
func (p *Proc) Do(ctx context.Context, method, path, token string) (int, []byte, error) {
	return p.DoBody(ctx, method, path, token, "")
}

// DoBody is Do with a request body.
func (p *Proc) DoBody(ctx context.Context, method, path, token, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+p.Addr+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, b, err
}

// Get is Do with GET and no token.
func (p *Proc) Get(ctx context.Context, path string) (int, []byte, error) {
	return p.Do(ctx, http.MethodGet, path, "")
}

// WaitHTTP polls GET path (tests/harness/wait) until it answers want, failing when
// ctx ends or the process exits first (with the tail of its log).
func (p *Proc) WaitHTTP(ctx context.Context, path string, want int) error {
	return wait.Until(ctx, 0, 20*time.Millisecond, func() error {
		st, _, err := p.Get(ctx, path)
		switch {
		case err == nil && st == want:
			return nil
		case !p.Alive():
			return wait.Stop(fmt.Errorf("electd %s exited (%v) before %s answered %d; log tail:\n%s",
				p.Name, p.ExitErr(), path, want, p.LogTail(20)))
		}
		return fmt.Errorf("electd %s: %s did not answer %d (last %d, %v)", p.Name, path, want, st, err)
	})
}

// Health is /healthz/leader's answer as the tests read it: with its status,
// and the fencing token 0 when the answer has none (a follower's null).
type Health struct {
	Status           int
	IsLeader         bool
	Reason           string
	LeaseRemainingMs float64
	FencingToken     int64
}

// ParseHealth reads an answer of GET /healthz/leader (internal/api's
// LeaderHealth) with its status.
func ParseHealth(status int, body []byte) (Health, error) {
	var b api.LeaderHealth
	if err := json.Unmarshal(body, &b); err != nil {
		return Health{Status: status}, err
	}
	h := Health{Status: status, IsLeader: b.IsLeader, Reason: b.Reason, LeaseRemainingMs: float64(b.LeaseRemainingMS)}
	if b.FencingToken != nil {
		h.FencingToken = *b.FencingToken
	}
	return h, nil
}

// LeaderHealth asks GET /healthz/leader once.
func (p *Proc) LeaderHealth(ctx context.Context) (Health, error) {
	st, body, err := p.Get(ctx, "/healthz/leader")
	if err != nil {
		return Health{}, err
	}
	h, err := ParseHealth(st, body)
	if err != nil {
		return h, fmt.Errorf("electd %s: /healthz/leader answered %d with %q: %w", p.Name, st, body, err)
	}
	return h, nil
}

// IsLeader asks /healthz/leader once: true on 200.
func (p *Proc) IsLeader(ctx context.Context) bool {
	st, _, err := p.Get(ctx, "/healthz/leader")
	return err == nil && st == http.StatusOK
}

// LeaderView is GET /leader's answer.
type LeaderView = api.Leader

// View reads GET /leader; an answer other than 200 is an error.
func (p *Proc) View(ctx context.Context) (LeaderView, error) {
	var v LeaderView
	return v, p.getJSON(ctx, "/leader", &v)
}

// ParticipantView is one entry of GET /participants.
type ParticipantView = api.Participant

// Participants reads GET /participants.
func (p *Proc) Participants(ctx context.Context) ([]ParticipantView, error) {
	var v []ParticipantView
	return v, p.getJSON(ctx, "/participants", &v)
}

func (p *Proc) getJSON(ctx context.Context, path string, v any) error {
	st, body, err := p.Get(ctx, path)
	if err != nil {
		return err
	}
	if st != http.StatusOK {
		return fmt.Errorf("electd %s: GET %s: %d %s", p.Name, path, st, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("electd %s: GET %s: %q: %w", p.Name, path, body, err)
	}
	return nil
}

// Metrics reads GET /metrics, parsed by expfmt, by metric name.
func (p *Proc) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	st, body, err := p.Get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	if st != http.StatusOK {
		return nil, fmt.Errorf("electd %s: GET /metrics: %d", p.Name, st)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("electd %s: /metrics: %w", p.Name, err)
	}
	return mfs, nil
}

// Metric returns the value of the gauge, counter or untyped metric name, the sum over its
// series if it has several.
func (p *Proc) Metric(ctx context.Context, name string) (float64, error) {
	mfs, err := p.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return Value(mfs, name)
}

// Value is the value of the gauge, counter or untyped metric name in mfs, summed over its
// series.
func Value(mfs map[string]*dto.MetricFamily, name string) (float64, error) {
	mf := mfs[name]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return 0, fmt.Errorf("no metric %s", name)
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		switch {
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		default:
			return 0, fmt.Errorf("metric %s is a %s, not a single value", name, mf.GetType())
		}
	}
	return sum, nil
}

// SessionTimeout is the negotiated session timeout from the metrics, or 0 when it is not
// known yet.
func (p *Proc) SessionTimeout(ctx context.Context) time.Duration {
	if v, err := p.Metric(ctx, "electd_zk_session_timeout_seconds"); err == nil && v > 0 {
		return time.Duration(v * float64(time.Second))
	}
	return 0
}

// SessionID parses a "0x..." session id; 0 when empty or malformed.
func SessionID(hex string) int64 {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(hex), "0x"), 16, 64)
	if err != nil {
		return 0
	}
	return int64(v)
}
