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
)

// maxBody bounds what the helpers read of an answer.
const maxBody = 4 << 20

// Do sends one request (with "Authorization: Bearer token" unless token is "") and
// returns the status and body. An error means no answer.
func (p *Proc) Do(ctx context.Context, method, path, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+p.Addr+path, nil)
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, body, err
}

// Get is Do with GET and no token.
func (p *Proc) Get(ctx context.Context, path string) (int, []byte, error) {
	return p.Do(ctx, http.MethodGet, path, "")
}

// WaitHTTP polls GET path until it answers want, failing when ctx ends or the process
// exits first (with the tail of its log).
func (p *Proc) WaitHTTP(ctx context.Context, path string, want int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st, _, err := p.Get(ctx, path)
		if err == nil && st == want {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("electd %s exited (%v) before %s answered %d; log tail:\n%s", p.Name, p.err, path, want, p.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("electd %s: %s did not answer %d (last %d, %v): %w", p.Name, path, want, st, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// Health is /healthz/leader's answer.
type Health struct {
	Status           int     `json:"-"`
	IsLeader         bool    `json:"is_leader"`
	Reason           string  `json:"reason"`
	LeaseRemainingMs float64 `json:"lease_remaining_ms"`
	FencingToken     int64   `json:"fencing_token"`
}

// LeaderHealth asks GET /healthz/leader once.
func (p *Proc) LeaderHealth(ctx context.Context) (Health, error) {
	st, body, err := p.Get(ctx, "/healthz/leader")
	if err != nil {
		return Health{}, err
	}
	h := Health{Status: st}
	if err := json.Unmarshal(body, &h); err != nil {
		return h, fmt.Errorf("electd %s: /healthz/leader answered %d with %q: %w", p.Name, st, body, err)
	}
	return h, nil
}

// IsLeader asks /healthz/leader once: true on 200.
func (p *Proc) IsLeader(ctx context.Context) bool {
	st, _, err := p.Get(ctx, "/healthz/leader")
	return err == nil && st == http.StatusOK
}

// LeaderView is the part of GET /leader the tests read.
type LeaderView struct {
	Leader *struct {
		ID           string `json:"id"`
		Advertise    string `json:"advertise"`
		Node         string `json:"node"`
		Session      string `json:"session"`
		FencingToken int64  `json:"fencing_token"`
	} `json:"leader"`
	Self struct {
		ID       string `json:"id"`
		IsLeader bool   `json:"is_leader"`
		State    string `json:"state"`
		Session  string `json:"session"`
	} `json:"self"`
	Mode string `json:"mode"`
	Path string `json:"path"`
}

// LeaderID is the leader's id, "" when none is known.
func (v LeaderView) LeaderID() string {
	if v.Leader == nil {
		return ""
	}
	return v.Leader.ID
}

// View reads GET /leader; an answer other than 200 is an error.
func (p *Proc) View(ctx context.Context) (LeaderView, error) {
	var v LeaderView
	return v, p.getJSON(ctx, "/leader", &v)
}

// ParticipantView is one entry of GET /participants.
type ParticipantView struct {
	ID           string  `json:"id"`
	Advertise    string  `json:"advertise"`
	Node         *string `json:"node"`
	Session      string  `json:"session"`
	FencingToken *int64  `json:"fencing_token"`
	IsLeader     bool    `json:"is_leader"`
}

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
