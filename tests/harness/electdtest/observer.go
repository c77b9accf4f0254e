package electdtest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/electd/electd/tests/harness/invariant"
)

// Observer polls every participant's /healthz/leader from outside, one goroutine per
// participant over its own keep-alive connection, and records each answer into its
// invariant.Log (which it embeds) with the request's send and receive times. It knows
// nothing of ZooKeeper or of faults.
type Observer struct {
	*invariant.Log
	period  time.Duration
	timeout time.Duration

	mu      sync.Mutex
	pollers map[string]*poller
	stopped bool
}

type poller struct {
	stop chan struct{}
	done chan struct{}
}

// NewObserver returns an observer that polls each participant every period and gives a
// request up after timeout (recorded as unanswered).
func NewObserver(period, timeout time.Duration) *Observer {
	return &Observer{Log: invariant.NewLog(), period: period, timeout: timeout, pollers: map[string]*poller{}}
}

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

// probe sends one GET and returns its sample, timed with now.
func probe(client *http.Client, url string, now func() time.Duration) invariant.Sample {
	send := now()
	resp, err := client.Get(url)
	if err != nil {
		return invariant.Sample{Send: send, Recv: now()}
	}
	return sampleOf(resp, send, now)
}

// ProbeOn sends GET /healthz/leader on conn (an open connection to the process) at once
// and reads the answer: it catches the very first answer of a process continued by
// SIGCONT, on a connection the kernel accepted while it was stopped.
func ProbeOn(conn net.Conn, now func() time.Duration) invariant.Sample {
	send := now()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /healthz/leader HTTP/1.1\r\nHost: electd\r\n\r\n"); err != nil {
		return invariant.Sample{Send: send, Recv: now()}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return invariant.Sample{Send: send, Recv: now()}
	}
	return sampleOf(resp, send, now)
}

// sampleOf reads an answer of /healthz/leader into a sample: a claim is a 200.
func sampleOf(resp *http.Response, send time.Duration, now func() time.Duration) invariant.Sample {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	s := invariant.Sample{Send: send, Recv: now()}
	if err != nil {
		return s // half an answer is none
	}
	s.Answered = true
	s.Leader = resp.StatusCode == http.StatusOK
	s.State = strconv.Itoa(resp.StatusCode)
	if h, err := ParseHealth(resp.StatusCode, body); err == nil {
		s.Token = h.FencingToken
		s.Lease = time.Duration(h.LeaseRemainingMs * float64(time.Millisecond))
	}
	return s
}
