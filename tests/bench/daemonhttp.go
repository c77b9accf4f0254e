package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/internal/api"
)

// pollResult is the answer to a long poll of /healthz/leader?wait=.
type pollResult struct {
	code int
	at   time.Time // when the status line arrived
	err  error
}

// longPoll asks d for /healthz/leader?wait=wait on a connection of its own,
// opened (and warmed with a /healthz) before it returns, so that the
// answer's time is not a TCP handshake's. The result arrives on the channel.
func (d *daemon) longPoll(ctx context.Context, wait time.Duration) (<-chan pollResult, error) {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true}
	c := &http.Client{Transport: tr}
	warm, err := c.Get("http://" + d.addr + "/healthz")
	if err != nil {
		return nil, fmt.Errorf("electd %s: %w", d.id, err)
	}
	_, _ = bufio.NewReader(warm.Body).WriteTo(discard{})
	warm.Body.Close()
	out := make(chan pollResult, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		"http://"+d.addr+"/healthz/leader?wait="+wait.String(), nil)
	if err != nil {
		return nil, err
	}
	go func() {
		defer tr.CloseIdleConnections()
		resp, err := c.Do(req)
		at := time.Now()
		if err != nil {
			out <- pollResult{err: err, at: at}
			return
		}
		resp.Body.Close()
		out <- pollResult{code: resp.StatusCode, at: at}
	}()
	return out, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// participants reads the queue through d (a ZooKeeper read by d).
func (d *daemon) participants(ctx context.Context) ([]api.Participant, error) {
	code, b := d.get(ctx, "/participants")
	if code != http.StatusOK {
		return nil, fmt.Errorf("electd %s: GET /participants: %d %s", d.id, code, b)
	}
	var ps []api.Participant
	if err := json.Unmarshal(b, &ps); err != nil {
		return nil, fmt.Errorf("electd %s: GET /participants: %w", d.id, err)
	}
	return ps, nil
}

// metric reads one gauge from d's /metrics (the first sample of that name).
func (d *daemon) metric(ctx context.Context, name string) (float64, error) {
	code, b := d.get(ctx, "/metrics")
	if code != http.StatusOK {
		return 0, fmt.Errorf("electd %s: GET /metrics: %d", d.id, code)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		return strconv.ParseFloat(f[len(f)-1], 64)
	}
	return 0, fmt.Errorf("electd %s: no %s in /metrics", d.id, name)
}

// awaitLease waits until d holds a lease (it renews as leader or next in
// line), so that a handoff to it needs no renewal first.
func (d *daemon) awaitLease(ctx context.Context) error {
	err := d.poll(ctx, func() bool {
		v, err := d.metric(ctx, "electd_lease_remaining_seconds")
		return err == nil && v > 0
	})
	if err != nil {
		return fmt.Errorf("electd %s: no lease: %w", d.id, err)
	}
	return nil
}
