package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/zksession"
)

// member is one simulated participant: a Session and an Elector of its own
// (its own ZooKeeper connection), as one electd process has, without HTTP.
type member struct {
	id    string
	sess  *zksession.Session
	el    *election.Elector
	stop  context.CancelFunc
	ran   chan struct{} // closed when Run returned
	syncs atomic.Int64  // lease renewals (syncs) that succeeded
}

// SessionRecorder: counts the syncs.
func (m *member) SessionExpired()            {}
func (m *member) Reconnected()               {}
func (m *member) LeaseRenewed(time.Duration) { m.syncs.Add(1) }

// startMember connects and starts campaigning; it does not wait to join.
func startMember(servers []string, timeout time.Duration, path, id string) (*member, error) {
	m := &member{id: id, ran: make(chan struct{})}
	var err error
	m.sess, err = zksession.Connect(zksession.Config{Servers: servers, SessionTimeout: timeout, Recorder: m})
	if err != nil {
		return nil, err
	}
	// Next-in-line handoff, as the electd processes of the bench (electd.go).
	m.el, err = election.New(m.sess, election.Config{Path: path, ID: id, Handoff: election.HandoffNext})
	if err != nil {
		m.sess.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		defer close(m.ran)
		_ = m.el.Run(ctx)
	}()
	return m, nil
}

// leave resigns (deletes the node) and closes the session, as electd's
// shutdown does.
func (m *member) leave(ctx context.Context) error {
	err := m.el.Resign(ctx)
	m.stop()
	<-m.ran
	m.sess.Close()
	return err
}

// requests is the election's ZooKeeper requests so far: re-checks, reads
// and writes. Syncs (periodic, counted apart), pings and the library's own
// requests (SetWatches after a reconnect) are not counted.
func (m *member) requests() int64 {
	c := m.el.Counters()
	return int64(c.Rechecks + c.Reads + c.Writes)
}

// crowd is the participants the bench hosts.
type crowd struct {
	servers []string
	timeout time.Duration
	mu      sync.Mutex
	members []*member
	started atomic.Int64 // numbers the ids
}

// start starts n members on path, at most par connecting at once, and
// returns once all have been started (not joined).
func (c *crowd) start(ctx context.Context, path, prefix string, n, par int) ([]*member, error) {
	out := make([]*member, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var first atomic.Value
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m, err := startMember(c.servers, c.timeout, path, prefix+strconv.FormatInt(c.started.Add(1), 10))
			if err != nil {
				first.CompareAndSwap(nil, err)
				return
			}
			out[i] = m
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.members = append(c.members, out...)
	c.mu.Unlock()
	return out, nil
}

// minAvailable stops a scale configuration when the machine, shared with
// others, has less memory available than this.
const minAvailable = 6 << 30

// Milestone is how many participants had joined how long after the first
// was started.
type Milestone struct {
	Joined int
	At     time.Duration
}

// awaitJoined polls until every member has joined and knows the leader. It
// gives up after limit, or when this process's resident memory passes
// budget (bytes; 0: no budget), saying how many had joined. It returns when
// each further tenth of ms had joined, counted from start.
func awaitJoined(ctx context.Context, ms []*member, start time.Time, limit time.Duration, budget int64) ([]Milestone, error) {
	deadline := time.Now().Add(limit)
	var marks []Milestone
	for {
		waiting := 0
		for _, m := range ms {
			if st := m.el.Status(); !st.Joined || st.Leader == nil {
				waiting++
			}
		}
		joined := len(ms) - waiting
		for len(marks) < 10 && joined*10 >= (len(marks)+1)*len(ms) {
			marks = append(marks, Milestone{Joined: joined, At: time.Since(start)})
		}
		if waiting == 0 {
			return marks, nil
		}
		if time.Now().After(deadline) {
			return marks, fmt.Errorf("%d of %d participants joined after %v", joined, len(ms), limit)
		}
		if rss := selfRSS(); budget > 0 && rss > budget {
			return marks, fmt.Errorf("memory budget: the bench process's RSS reached %s with %d of %d participants joined, %v after the first started",
				mib(rss), joined, len(ms), time.Since(start).Round(time.Second))
		}
		if avail := procKB("/proc/meminfo", "MemAvailable:") << 10; avail > 0 && avail < minAvailable {
			return marks, fmt.Errorf("the machine's available memory fell to %s (RSS of the bench %s) with %d of %d participants joined, %v after the first started",
				mib(avail), mib(selfRSS()), joined, len(ms), time.Since(start).Round(time.Second))
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return marks, err
		}
	}
}

// closeAll closes every session at once. Called after the ensemble was
// stopped: nobody re-reads a queue that is being torn down, and each Close
// gives up on the server within a second.
func (c *crowd) closeAll() {
	c.mu.Lock()
	ms := c.members
	c.members = nil
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		if m == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.stop()
			m.sess.Close()
			<-m.ran
		}()
	}
	wg.Wait()
}

// queueOrder returns ms sorted as the election's queue (by the sequence
// after the last "latch-" of each own node).
func queueOrder(ms []*member) []*member {
	type entry struct {
		m   *member
		seq string
	}
	es := make([]entry, 0, len(ms))
	for _, m := range ms {
		node := m.el.Status().Node
		if i := strings.LastIndex(node, "latch-"); i >= 0 {
			es = append(es, entry{m, node[i+len("latch-"):]})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.seq, b.seq) })
	out := make([]*member, len(es))
	for i, e := range es {
		out[i] = e.m
	}
	return out
}

// handoff resigns the leader of ms and returns how long until its
// successor's Await returned, and the election requests the change cost
// (counted until no member sent any for quiet), closeSession included.
func handoff(ctx context.Context, ms []*member, quiet time.Duration) (time.Duration, int64, *member, error) {
	q := queueOrder(ms)
	if len(q) < 2 {
		return 0, 0, nil, errors.New("fewer than two participants in the queue")
	}
	leader, next := q[0], q[1]
	if !leader.el.Status().IsLeader {
		return 0, 0, nil, fmt.Errorf("%s, first in the queue, does not lead", leader.id)
	}
	before := totalRequests(ms)
	var syncs2 int64
	if len(q) > 2 {
		syncs2 = q[2].syncs.Load()
	}
	ledAt := make(chan time.Time, 1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ready := make(chan struct{})
	go func() {
		close(ready)
		if _, err := next.el.Await(wctx); err == nil {
			ledAt <- time.Now()
		}
		close(ledAt)
	}()
	<-ready
	if err := sleep(ctx, 20*time.Millisecond); err != nil { // Await is subscribed
		return 0, 0, nil, err
	}
	t0 := time.Now()
	if err := leader.leave(wctx); err != nil {
		return 0, 0, nil, fmt.Errorf("%s resign: %w", leader.id, err)
	}
	at, ok := <-ledAt
	if !ok {
		return 0, 0, nil, fmt.Errorf("%s did not lead within 30 s of %s resigning", next.id, leader.id)
	}
	n := settledRequests(ctx, ms, quiet)
	reqs := n - before + 1 // + the leader's closeSession
	if len(q) > 2 && q[2].syncs.Load() > syncs2 {
		reqs++ // the new successor's first renewal: it starts renewing now
	}
	return at.Sub(t0), reqs, leader, nil
}

func totalRequests(ms []*member) int64 {
	var n int64
	for _, m := range ms {
		n += m.requests()
	}
	return n
}

// settledRequests waits until the members' request count has not changed
// for quiet (at most 10 s) and returns it.
func settledRequests(ctx context.Context, ms []*member, quiet time.Duration) int64 {
	last, since := totalRequests(ms), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if sleep(ctx, quiet/4) != nil {
			break
		}
		n := totalRequests(ms)
		if n != last {
			last, since = n, time.Now()
			continue
		}
		if time.Since(since) >= quiet {
			break
		}
	}
	return last
}
