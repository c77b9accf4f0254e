package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Observer polls every participant's /healthz/leader from outside, one
// goroutine per participant over its own keep-alive connection, and keeps
// every answer with its request's send and receive times on one monotonic
// clock. It knows nothing of ZooKeeper or of the faults.
type Observer struct {
	epoch   time.Time
	period  time.Duration
	timeout time.Duration

	mu      sync.Mutex
	samples []Sample
	pollers map[string]*poller
	changed chan struct{} // closed and replaced on every new sample
	stopped bool
}

type poller struct {
	stop chan struct{}
	done chan struct{}
}

// NewObserver returns an observer that polls each participant every period
// and gives a request up after timeout (recorded as status 0).
func NewObserver(period, timeout time.Duration) *Observer {
	return &Observer{
		epoch:   time.Now(),
		period:  period,
		timeout: timeout,
		pollers: map[string]*poller{},
		changed: make(chan struct{}),
	}
}

// Now is the observer's clock: time since it was created, monotonic.
func (o *Observer) Now() time.Duration { return time.Since(o.epoch) }

// Epoch is the wall-clock time of the observer's time 0.
func (o *Observer) Epoch() time.Time { return o.epoch }

// Period is the polling period.
func (o *Observer) Period() time.Duration { return o.period }

// Add starts polling http://addr/healthz/leader as participant who.
func (o *Observer) Add(who, addr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped || o.pollers[who] != nil {
		return
	}
	p := &poller{stop: make(chan struct{}), done: make(chan struct{})}
	o.pollers[who] = p
	go o.poll(who, "http://"+addr+"/healthz/leader", p)
}

// Remove stops polling who and waits for its goroutine; its samples stay.
func (o *Observer) Remove(who string) {
	o.mu.Lock()
	p := o.pollers[who]
	delete(o.pollers, who)
	o.mu.Unlock()
	if p != nil {
		close(p.stop)
		<-p.done
	}
}

// Stop stops all polling and waits for the goroutines.
func (o *Observer) Stop() {
	o.mu.Lock()
	o.stopped = true
	var names []string
	for who := range o.pollers {
		names = append(names, who)
	}
	o.mu.Unlock()
	for _, who := range names {
		o.Remove(who)
	}
}

// Record adds a sample taken outside the pollers (a test's own probe).
func (o *Observer) Record(s Sample) {
	o.mu.Lock()
	o.samples = append(o.samples, s)
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
}

// Samples returns a copy of every sample so far, in the order recorded.
func (o *Observer) Samples() []Sample {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.samples)
}

// latestScan bounds how far back Latest looks: over a second of answers.
const latestScan = 5000

// Latest returns each participant's latest-received sample among the
// recent ones.
func (o *Observer) Latest() map[string]Sample {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]Sample{}
	for i := len(o.samples) - 1; i >= 0 && i >= len(o.samples)-latestScan; i-- {
		s := o.samples[i]
		if cur, ok := out[s.Who]; !ok || s.Recv > cur.Recv {
			out[s.Who] = s
		}
	}
	return out
}

// WaitFor blocks until pred accepts a sample, or ctx ends. It scans every sample once and then only new ones.
func (o *Observer) WaitFor(ctx context.Context, pred func(Sample) bool) (Sample, error) {
	next := 0
	for {
		o.mu.Lock()
		batch := o.samples[next:]
		next = len(o.samples)
		changed := o.changed
		o.mu.Unlock()
		for _, s := range batch {
			if pred(s) {
				return s, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Sample{}, ctx.Err()
		}
	}
}

// WaitLeader blocks until a 200 sent at or after t by a participant not in
// exclude has been received, or ctx ends.
func (o *Observer) WaitLeader(ctx context.Context, t time.Duration, exclude ...string) (Sample, error) {
	return o.WaitFor(ctx, func(s Sample) bool {
		return s.OK() && s.Send >= t && !slices.Contains(exclude, s.Who)
	})
}

// WaitCovered blocks until every participant named has answered a request
// sent at or after t (any status), so that a window ending at t is fully
// observed.
func (o *Observer) WaitCovered(ctx context.Context, t time.Duration, who ...string) error {
	left := map[string]bool{}
	for _, w := range who {
		left[w] = true
	}
	if len(left) == 0 {
		return nil
	}
	_, err := o.WaitFor(ctx, func(s Sample) bool {
		if s.Send >= t {
			delete(left, s.Who)
		}
		return len(left) == 0
	})
	return err
}

func (o *Observer) poll(who, url string, p *poller) {
	defer close(p.done)
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: o.timeout}).DialContext,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}
	client := &http.Client{Transport: tr, Timeout: o.timeout}
	defer tr.CloseIdleConnections()
	tick := time.NewTicker(o.period)
	defer tick.Stop()
	for {
		s := probe(client, url, o.Now)
		s.Who = who
		o.Record(s)
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

// healthBody is /healthz/leader's JSON.
type healthBody struct {
	IsLeader         bool    `json:"is_leader"`
	Reason           string  `json:"reason"`
	LeaseRemainingMs float64 `json:"lease_remaining_ms"`
	FencingToken     int64   `json:"fencing_token"`
}

// probe sends one GET and returns its sample, timed with now.
func probe(client *http.Client, url string, now func() time.Duration) Sample {
	send := now()
	resp, err := client.Get(url)
	if err != nil {
		return Sample{Send: send, Recv: now()}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	s := Sample{Status: resp.StatusCode, Send: send, Recv: now()}
	if err != nil {
		s.Status = 0
		return s
	}
	var h healthBody
	if json.Unmarshal(body, &h) == nil {
		s.Token = h.FencingToken
		s.Lease = int64(h.LeaseRemainingMs)
	}
	return s
}

// Timeline renders each participant's samples in [from, to] as runs of equal
// status, for failure reports.
func Timeline(samples []Sample, from, to time.Duration) string {
	byWho := map[string][]Sample{}
	var names []string
	for _, s := range samples {
		if s.Recv < from || s.Send > to {
			continue
		}
		if _, ok := byWho[s.Who]; !ok {
			names = append(names, s.Who)
		}
		byWho[s.Who] = append(byWho[s.Who], s)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, who := range names {
		ss := byWho[who]
		slices.SortFunc(ss, func(a, b Sample) int { return int(a.Send - b.Send) })
		fmt.Fprintf(&b, "  %s:", who)
		for i := 0; i < len(ss); {
			j := i
			for j+1 < len(ss) && ss[j+1].Status == ss[i].Status && ss[j+1].Token == ss[i].Token {
				j++
			}
			fmt.Fprintf(&b, " %d", ss[i].Status)
			if ss[i].OK() {
				fmt.Fprintf(&b, "(tok %d)", ss[i].Token)
			}
			fmt.Fprintf(&b, "x%d[%s..%s]", j-i+1, ms(ss[i].Send), ms(ss[j].Recv))
			i = j + 1
		}
		b.WriteByte('\n')
	}
	return b.String()
}
