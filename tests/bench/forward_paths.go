package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/electd/electd/tests/harness/proxykit"
)

// The ways the forward section sends a request to an application: straight
// to it, through each floor (one hop, and two chained), and through
// electd's proxies (the leader's: one hop; a follower's, then the
// leader's: two).
const (
	viaDirect = "direct"
	viaElectd = "electd"
)

// ForwardPath is one way of sending a request, timed one request at a time.
type ForwardPath struct {
	Method string
	Via    string // viaDirect, floorGo, floorHAProxy or viaElectd
	Hops   int    // proxies on the way: 0 direct, 1 or 2
	Fresh  bool   // a new connection for every request
	Took   Dist
}

// Name is how the report names the path.
func (p ForwardPath) Name() string { return pathName(p.Via, p.Hops, p.Fresh) }

func pathName(via string, hops int, fresh bool) string {
	switch {
	case via == viaDirect && fresh:
		return "direct, a new connection each"
	case via == viaDirect:
		return "direct"
	case via == viaElectd && hops == 1:
		return "electd: the leader's proxy"
	case via == viaElectd:
		return "electd: a follower's, then the leader's"
	case hops == 1:
		return via + ", one hop"
	}
	return via + ", two hops"
}

// ForwardLoad is one path at saturation: Conns kept-alive connections, each
// sending its next request when the answer is read, for Took.
type ForwardLoad struct {
	Method   string
	Via      string
	Hops     int
	Conns    int
	Took     time.Duration
	Requests int
	Errors   int // answers other than 200
	Latency  Dist
	// CPU is the user+sys time of the path's proxy processes over the run
	// (/proc/PID/stat): every electd or floor process on the path.
	CPU time.Duration
}

// PerSecond is the throughput.
func (l ForwardLoad) PerSecond() float64 { return float64(l.Requests) / l.Took.Seconds() }

// CPUPerRequest is the proxies' CPU time per request answered.
func (l ForwardLoad) CPUPerRequest() time.Duration {
	if l.Requests == 0 {
		return 0
	}
	return l.CPU / time.Duration(l.Requests)
}

// route is a path and the processes that serve it.
type route struct {
	via  string
	hops int
	addr string
	pids []int // the proxies' processes; none direct
}

// directHeaders are what the floors and electd's proxy hand the application;
// a request sent to it directly carries them itself, so that one
// application, with its fence, serves every path.
var directHeaders = map[string]string{"Electd-Fencing-Token": "1", "Electd-Leader-Id": "direct"}

// forwardBody is the POSTs' body: a small JSON write.
const forwardBody = `{"op":"write","value":42}`

// latencyBlocks is how many turns the paths take, one after the other,
// each timing its share of the requests: a load that comes and goes on a
// shared machine then weighs on every path alike (issue 37).
const latencyBlocks = 10

// pathClient sends one request at a time along a path, on a kept-alive
// connection unless fresh.
type pathClient struct {
	method string
	r      route
	tr     *http.Transport
	c      *http.Client
}

func newPathClient(method string, r route, fresh bool) *pathClient {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableKeepAlives: fresh}
	return &pathClient{method: method, r: r, tr: tr, c: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

func (pc *pathClient) send(ctx context.Context) error {
	var body io.Reader
	if pc.method == http.MethodPost {
		body = strings.NewReader(forwardBody)
	}
	req, err := http.NewRequestWithContext(ctx, pc.method, "http://"+pc.r.addr+"/x", body)
	if err != nil {
		return err
	}
	if pc.r.via == viaDirect {
		for k, v := range directHeaders {
			req.Header.Set(k, v)
		}
	}
	res, err := pc.c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return nil
}

// time sends n requests one after the other and times each.
func (pc *pathClient) time(ctx context.Context, n int, d Dist) (Dist, error) {
	for range n {
		start := time.Now()
		if err := pc.send(ctx); err != nil {
			return d, err
		}
		d = append(d, time.Since(start))
	}
	return d, nil
}

// timeRequests sends n requests along each of routes one after the other,
// after a warm-up, and times each; fresh dials a connection for every one.
// The routes take turns (latencyBlocks), so that they are timed side by side.
func timeRequests(ctx context.Context, method string, routes []route, n int, fresh bool) ([]Dist, error) {
	pcs := make([]*pathClient, len(routes))
	for i, r := range routes {
		pcs[i] = newPathClient(method, r, fresh)
		defer pcs[i].tr.CloseIdleConnections()
		for range min(n, 100) {
			if err := pcs[i].send(ctx); err != nil {
				return nil, pathErr(method, r, err)
			}
		}
	}
	ds := make([]Dist, len(routes))
	blocks := min(n, latencyBlocks)
	for b := range blocks {
		for i, pc := range pcs {
			var err error
			// The blocks share n out: the first n%blocks take one more.
			if ds[i], err = pc.time(ctx, n/blocks+boolInt(b < n%blocks), ds[i]); err != nil {
				return nil, pathErr(method, pc.r, err)
			}
		}
	}
	return ds, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func pathErr(method string, r route, err error) error {
	return fmt.Errorf("%s %s: %w", method, pathName(r.via, r.hops, false), err)
}

// rawRequest is method's request along r as the saturation load writes it.
func rawRequest(method string, r route) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s /x HTTP/1.1\r\nHost: bench\r\n", method)
	if r.via == viaDirect {
		for k, v := range directHeaders {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	if method == http.MethodPost {
		b.WriteString("Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(forwardBody)) + "\r\n\r\n" + forwardBody)
	} else {
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

// saturate drives r with conns kept-alive connections for d, each a plain
// loop over a TCP connection (loadConn), and reads the proxies' CPU time
// around the run.
func saturate(ctx context.Context, method string, r route, conns int, d time.Duration) (ForwardLoad, error) {
	res := ForwardLoad{Method: method, Via: r.via, Hops: r.hops, Conns: conns}
	req := rawRequest(method, r)
	// A short warm-up with as many connections: the proxies' pools of
	// connections to the next hop fill before the figures count.
	if _, _, err := drive(ctx, r.addr, req, conns, time.Now().Add(200*time.Millisecond)); err != nil {
		return res, err
	}
	cpu0 := procsCPU(r.pids)
	start := time.Now()
	var err error
	res.Latency, res.Errors, err = drive(ctx, r.addr, req, conns, start.Add(d))
	res.Took = time.Since(start)
	res.CPU = procsCPU(r.pids) - cpu0
	res.Requests = len(res.Latency)
	if err != nil {
		return res, fmt.Errorf("%s %s: %w", method, pathName(r.via, r.hops, false), err)
	}
	return res, nil
}

// paths times every path one request at a time, then drives each to
// saturation: straight to an application of the same kind as the
// participants' (no participant's, so that its fence is its own), through
// each floor one hop and two, and through the leader's and a follower's
// proxy.
func (r *forwardRig) paths(ctx context.Context, leader *forwardMember, res *ForwardResult) error {
	cfg := r.env.cfg
	direct, err := proxykit.StartApp(viaDirect, proxykit.NewFence())
	if err != nil {
		return err
	}
	defer direct.Close()
	routes := []route{{via: viaDirect, addr: direct.Addr}}
	for _, kind := range []string{floorGo, floorHAProxy} {
		for hops := 1; hops <= 2; hops++ {
			c, err := startChain(ctx, r.env, kind, direct.Addr, hops)
			if err != nil {
				return err
			}
			defer c.close()
			routes = append(routes, route{via: kind, hops: hops, addr: c.addr, pids: c.pids})
		}
	}
	follower := r.follower(leader)
	routes = append(routes,
		route{via: viaElectd, hops: 1, addr: leader.proxy, pids: []int{leader.d.pid()}},
		route{via: viaElectd, hops: 2, addr: follower.proxy, pids: []int{follower.d.pid(), leader.d.pid()}})
	methods := []string{http.MethodGet, http.MethodPost}
	for _, method := range methods {
		took, err := timeRequests(ctx, method, routes, cfg.ForwardRequests, false)
		if err != nil {
			return err
		}
		for i, rt := range routes {
			res.Latency = append(res.Latency, ForwardPath{Method: method, Via: rt.via, Hops: rt.hops, Took: took[i]})
		}
	}
	took, err := timeRequests(ctx, http.MethodPost, routes[:1], cfg.ForwardRequests, true)
	if err != nil {
		return err
	}
	res.Latency = append(res.Latency, ForwardPath{Method: http.MethodPost, Via: viaDirect, Fresh: true, Took: took[0]})
	r.env.progress("forward: latency of %d paths timed", len(res.Latency))
	for _, method := range methods {
		for _, rt := range routes {
			l, err := saturate(ctx, method, rt, cfg.ForwardConns, cfg.ForwardLoad)
			if err != nil {
				return err
			}
			r.env.progress("forward: %s %s at saturation: %.0f requests/s, %s CPU a request", method,
				pathName(rt.via, rt.hops, false), l.PerSecond(), us(l.CPUPerRequest()))
			res.Saturation = append(res.Saturation, l)
		}
	}
	return nil
}

// follower is a member other than leader.
func (r *forwardRig) follower(leader *forwardMember) *forwardMember {
	for _, m := range r.ms {
		if m != leader {
			return m
		}
	}
	return nil
}
