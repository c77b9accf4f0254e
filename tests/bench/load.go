package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LoadResult is /healthz/leader answered to a closed-loop load: each
// connection sends its next request when the previous answer is read.
type LoadResult struct {
	Conns      int
	Duration   time.Duration
	Requests   int
	PerSecond  float64
	Latency    Dist
	ServerCPU  float64 // electd's CPU over the run, in cores
	NotLeaders int     // answers other than 200 (must be 0: it leads)
}

// loadHealthz drives GET /healthz/leader over conns keep-alive connections
// for d. The client is a plain loop over a TCP connection (no net/http
// client, whose own cost would share the two cores with the server more
// than this one does).
func loadHealthz(ctx context.Context, target *daemon, conns int, d time.Duration) (*LoadResult, error) {
	res := &LoadResult{Conns: conns, Duration: d}
	cpu0 := cpuTime(target.pid())
	start := time.Now()
	var err error
	res.Latency, res.NotLeaders, err = drive(ctx, target.addr, loadRequest, conns, start.Add(d))
	took := time.Since(start)
	res.ServerCPU = (cpuTime(target.pid()) - cpu0).Seconds() / took.Seconds()
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	res.Requests = len(res.Latency)
	res.PerSecond = float64(res.Requests) / took.Seconds()
	return res, nil
}

// drive runs conns loadConn loops on addr until deadline, each on a
// connection of its own, and gathers their latencies, the answers that
// were not a 200 and the first error.
func drive(ctx context.Context, addr string, req []byte, conns int, deadline time.Time) (Dist, int, error) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		all  Dist
		bad  int
		errs []error
	)
	for range conns {
		wg.Go(func() {
			lat, n, err := loadConn(ctx, addr, req, deadline)
			mu.Lock()
			defer mu.Unlock()
			all, bad = append(all, lat...), bad+n
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return all, bad, errs[0]
	}
	return all, bad, nil
}

var loadRequest = []byte("GET /healthz/leader HTTP/1.1\r\nHost: electd\r\n\r\n")

// loadConn sends req on one connection, again and again, until deadline and
// returns each one's latency (request written until the whole answer read)
// and how many answers were not a 200.
func loadConn(ctx context.Context, addr string, req []byte, deadline time.Time) ([]time.Duration, int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(deadline.Add(5 * time.Second))
	r := bufio.NewReaderSize(c, 16<<10)
	tp := textproto.NewReader(r)
	lat := make([]time.Duration, 0, 1<<16)
	bad := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		t0 := time.Now()
		if _, err := c.Write(req); err != nil {
			return lat, bad, err
		}
		code, err := readAnswer(tp, r)
		if err != nil {
			return lat, bad, err
		}
		lat = append(lat, time.Since(t0))
		if code != 200 {
			bad++
		}
	}
	return lat, bad, nil
}

// readAnswer reads one HTTP/1.1 response with a Content-Length body, after
// any interim (1xx) answers: a proxy may relay its application's 100
// Continue to a client that did not ask for one, as HTTP/1.1 allows.
func readAnswer(tp *textproto.Reader, r *bufio.Reader) (int, error) {
	for {
		code, n, err := readHead(tp)
		if err != nil {
			return 0, err
		}
		if code >= 100 && code < 200 {
			continue
		}
		if n < 0 {
			return 0, fmt.Errorf("answer %d without Content-Length", code)
		}
		_, err = io.CopyN(io.Discard, r, int64(n))
		return code, err
	}
}

// readHead reads a status line and headers: the code and the
// Content-Length (-1 without one).
func readHead(tp *textproto.Reader) (code, n int, err error) {
	status, err := tp.ReadLine()
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(status)
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("status line %q", status)
	}
	code, _ = strconv.Atoi(f[1])
	n = -1
	for {
		line, err := tp.ReadLineBytes()
		if err != nil {
			return 0, 0, err
		}
		if len(line) == 0 {
			return code, n, nil
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
}
