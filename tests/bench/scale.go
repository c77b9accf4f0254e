package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/electd/electd/tests/harness/zktest"
)

// ScaleResult is participants hosted in the bench process (each its own
// Session and Elector, no HTTP) on a 3-server ensemble.
type ScaleResult struct {
	Heap     string        // the servers' -Xmx
	Baseline *ScalePoint   // two participants, refilled after each handoff
	Sizes    []*ScalePoint // one election of N participants
	// Elections is many elections of three participants each.
	Elections *ScalePoint
}

// ScalePoint is one configuration's figures. Err says what stopped it, if
// anything did; the figures before it are kept.
type ScalePoint struct {
	N         int // participants in all
	Elections int
	Joined    time.Duration // first start until every participant joined and knew its leader
	Handoff   Dist          // leader's Resign until its successor's Await returned
	Requests  []int64       // election requests per leader change (see handoff)
	// IdleRate is packets/s the ensemble received once all had joined
	// (mntr, all servers), pings included; Syncs is lease renewals/s.
	IdleRate, Syncs float64
	// Per participant: Go heap in use (includes go-zookeeper's 1.5 MiB
	// buffers, mostly never touched) and resident memory, after a GC.
	HeapPer, RSSPer int64
	// Milestones: when each tenth had joined.
	Milestones []Milestone
	// CPU used while joining, by the bench process (the participants) and
	// by the ZooKeeper servers together, and how long the joining took.
	BenchCPU, ServerCPU, JoinWall time.Duration
	Err                           string
}

// joinLimit bounds the wait for n participants to join: Config.JoinLimit,
// or by default 30 s + 10 ms each.
func (e *env) joinLimit(n int) time.Duration {
	if e.cfg.JoinLimit > 0 {
		return e.cfg.JoinLimit
	}
	return 30*time.Second + time.Duration(n)*10*time.Millisecond
}

func runScale(ctx context.Context, env *env) (*ScaleResult, error) {
	cfg := env.cfg
	// go-zookeeper gives each connection two 1.5 MiB buffers, mostly never
	// touched; the GC counts them as live heap, so at the default GOGC the
	// garbage of thousands of large getChildren replies would grow to that
	// much again (tens of GiB) before a collection.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	res := &ScaleResult{Heap: cfg.ZKHeap}
	var err error
	if res.Baseline, err = onEnsemble(env, func(ens *zktest.Ensemble, c *crowd) (*ScalePoint, error) {
		return scaleBaseline(ctx, env, ens, c)
	}); err != nil {
		return res, err
	}
	for _, n := range cfg.Scale {
		p, err := onEnsemble(env, func(ens *zktest.Ensemble, c *crowd) (*ScalePoint, error) {
			return scaleOne(ctx, env, ens, c, n), nil
		})
		if err != nil {
			return res, err
		}
		res.Sizes = append(res.Sizes, p)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	if cfg.Elections > 0 {
		p, err := onEnsemble(env, func(ens *zktest.Ensemble, c *crowd) (*ScalePoint, error) {
			return scaleElections(ctx, env, ens, c, cfg.Elections), nil
		})
		if err != nil {
			return res, err
		}
		res.Elections = p
	}
	return res, ctx.Err()
}

// onEnsemble runs f on a fresh 3-server ensemble and tears both down: the
// servers first, so that thousands of leaving participants do not re-read
// the queue as it empties.
func onEnsemble(env *env, f func(*zktest.Ensemble, *crowd) (*ScalePoint, error)) (*ScalePoint, error) {
	debug.FreeOSMemory() // what the previous configuration left
	ens, err := zktest.StartEnsemble(zktest.Options{Servers: 3, Heap: env.cfg.ZKHeap})
	if err != nil {
		return nil, err
	}
	c := &crowd{servers: ens.Servers(), timeout: env.cfg.SessionTimeout}
	defer func() {
		ens.Close()
		c.closeAll()
	}()
	return f(ens, c)
}

// scaleBaseline is the 2-participant handoff on the same ensemble, in the
// same process, by the same method: the figure the sizes compare with.
func scaleBaseline(ctx context.Context, env *env, ens *zktest.Ensemble, c *crowd) (*ScalePoint, error) {
	const path = "/bench/scale/2"
	p := &ScalePoint{N: 2, Elections: 1}
	ms, err := c.start(ctx, path, "two-", 2, 2)
	if err != nil {
		return nil, err
	}
	for i := range env.cfg.Warmup + env.cfg.Rounds {
		if _, err := awaitJoined(ctx, ms, time.Now(), 30*time.Second, 0); err != nil {
			return nil, err
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil { // the successor's lease
			return nil, err
		}
		took, reqs, gone, err := handoff(ctx, ms, 300*time.Millisecond)
		if err != nil {
			return nil, fmt.Errorf("2 participants, round %d: %w", i+1, err)
		}
		if i >= env.cfg.Warmup {
			p.Handoff = append(p.Handoff, took)
			p.Requests = append(p.Requests, reqs)
		}
		ms = remove(ms, gone)
		more, err := c.start(ctx, path, "two-", 1, 1)
		if err != nil {
			return nil, err
		}
		ms = append(ms, more...)
	}
	env.progress("scale baseline, 2 participants: handoff %s", p.Handoff)
	return p, nil
}

// scaleOne runs one election of n participants.
func scaleOne(ctx context.Context, env *env, ens *zktest.Ensemble, c *crowd, n int) *ScalePoint {
	p := &ScalePoint{N: n, Elections: 1}
	path := "/bench/scale/" + strconv.Itoa(n)
	heap0, rss0 := memNow()
	cpu := startCPU(ens)
	start := time.Now()
	ms, err := c.start(ctx, path, "p-", n, 64)
	if err == nil {
		p.Milestones, err = awaitJoined(ctx, ms, start, env.joinLimit(n), rss0+env.cfg.MemBudget)
	}
	cpu.stop(p)
	if err != nil {
		p.Err = err.Error()
		env.progress("scale %d: %v", n, err)
		return p
	}
	p.Joined = time.Since(start)
	env.progress("scale %d: all joined in %v", n, p.Joined.Round(time.Millisecond))
	heap1, rss1 := memNow()
	p.HeapPer, p.RSSPer = (heap1-heap0)/int64(n), (rss1-rss0)/int64(n)
	if p.IdleRate, p.Syncs, err = idleEnsemble(ctx, ens, ms, env.cfg.SettleWindow, env.cfg.ScaleWindow); err != nil {
		p.Err = err.Error()
		return p
	}
	for i := range env.cfg.ScaleRounds {
		took, reqs, gone, err := handoff(ctx, ms, 300*time.Millisecond)
		if err != nil {
			p.Err = fmt.Sprintf("handoff %d: %v", i+1, err)
			return p
		}
		p.Handoff = append(p.Handoff, took)
		p.Requests = append(p.Requests, reqs)
		ms = remove(ms, gone)
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			p.Err = err.Error()
			return p
		}
	}
	env.progress("scale %d: handoff %s", n, p.Handoff)
	return p
}

// scaleElections runs e elections of three participants each.
func scaleElections(ctx context.Context, env *env, ens *zktest.Ensemble, c *crowd, e int) *ScalePoint {
	p := &ScalePoint{N: 3 * e, Elections: e}
	heap0, rss0 := memNow()
	cpu := startCPU(ens)
	defer cpu.stop(p)
	start := time.Now()
	groups := make([][]*member, e)
	var all []*member
	for i := range e {
		ms, err := c.start(ctx, "/bench/elections/e"+strconv.Itoa(i), "e"+strconv.Itoa(i)+"-", 3, 3)
		if err != nil {
			p.Err = err.Error()
			return p
		}
		groups[i] = ms
		all = append(all, ms...)
	}
	var err error
	if p.Milestones, err = awaitJoined(ctx, all, start, env.joinLimit(len(all)), rss0+env.cfg.MemBudget); err != nil {
		p.Err = err.Error()
		return p
	}
	p.Joined = time.Since(start)
	cpu.stop(p)
	env.progress("%d elections: all joined in %v", e, p.Joined.Round(time.Millisecond))
	heap1, rss1 := memNow()
	p.HeapPer, p.RSSPer = (heap1-heap0)/int64(len(all)), (rss1-rss0)/int64(len(all))
	if p.IdleRate, p.Syncs, err = idleEnsemble(ctx, ens, all, env.cfg.SettleWindow, env.cfg.ScaleWindow); err != nil {
		p.Err = err.Error()
		return p
	}
	for i := range min(env.cfg.ScaleRounds, e) {
		took, reqs, _, err := handoff(ctx, groups[i*e/min(env.cfg.ScaleRounds, e)], 300*time.Millisecond)
		if err != nil {
			p.Err = fmt.Sprintf("handoff %d: %v", i+1, err)
			return p
		}
		p.Handoff = append(p.Handoff, took)
		p.Requests = append(p.Requests, reqs)
	}
	env.progress("%d elections: handoff %s", e, p.Handoff)
	return p
}

// idleEnsemble is packets/s on all servers and syncs/s of ms over window.
func idleEnsemble(ctx context.Context, ens *zktest.Ensemble, ms []*member, settle, window time.Duration) (float64, float64, error) {
	if err := sleep(ctx, settle); err != nil { // joins settle
		return 0, 0, err
	}
	a, err := ens.PacketsReceived()
	if err != nil {
		return 0, 0, err
	}
	s0 := totalSyncs(ms)
	start := time.Now()
	if err := sleep(ctx, window); err != nil {
		return 0, 0, err
	}
	b, err := ens.PacketsReceived()
	if err != nil {
		return 0, 0, err
	}
	secs := time.Since(start).Seconds()
	return float64(b-a) / secs, float64(totalSyncs(ms)-s0) / secs, nil
}

func totalSyncs(ms []*member) int64 {
	var n int64
	for _, m := range ms {
		n += m.syncs.Load()
	}
	return n
}

func remove(ms []*member, gone *member) []*member {
	out := ms[:0:0]
	for _, m := range ms {
		if m != gone {
			out = append(out, m)
		}
	}
	return out
}

// memNow is the Go heap in use and this process's RSS, after a GC.
func memNow() (heap, rss int64) {
	runtime.GC()
	var st runtime.MemStats
	runtime.ReadMemStats(&st)
	return int64(st.HeapInuse), selfRSS()
}

// selfRSS is this process's resident memory in bytes.
func selfRSS() int64 { return procKB("/proc/"+strconv.Itoa(os.Getpid())+"/status", "VmRSS:") << 10 }

// cpuMeter measures the CPU of this process and of the servers from its
// start until stop, once.
type cpuMeter struct {
	servers  []int
	self, zk time.Duration
	start    time.Time
	stopped  bool
}

func startCPU(ens *zktest.Ensemble) *cpuMeter {
	m := &cpuMeter{servers: serverPIDs(ens), start: time.Now()}
	m.self, m.zk = cpuTime(os.Getpid()), cpuOf(m.servers)
	return m
}

func (m *cpuMeter) stop(p *ScalePoint) {
	if m.stopped {
		return
	}
	m.stopped = true
	p.BenchCPU, p.ServerCPU = cpuTime(os.Getpid())-m.self, cpuOf(m.servers)-m.zk
	p.JoinWall = time.Since(m.start)
}
