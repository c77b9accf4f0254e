package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options for an ensemble. Zero values mean the defaults.
type Options struct {
	Servers     int           // 1 = standalone (default), or 3 (an ensemble); any n >= 1 works
	TickTime    time.Duration // default 500ms (session timeouts then 1s..10s); whole milliseconds
	InitLimit   int           // default 10
	SyncLimit   int           // default 5
	PeerProxies bool          // route every server's quorum+election traffic to each peer through its own Proxy, so Isolate works
	TLS         *TLS          // also serve clients over TLS on a secure port of each member (see tls.go)
	// RunStaleRequests makes the servers execute a request whose client connection
	// closed after it arrived. ZooKeeper drops such requests by default when they are
	// still queued (zookeeper.request_stale_connection_check): a race a loaded machine
	// loses, which makes Proxy.DropAfterCreate's "applied, reply lost" a coin toss. Set
	// it where a test needs the create applied.
	RunStaleRequests bool
	// Heap is each server JVM's -Xmx, e.g. "1g"; default "256m". Benchmarks with thousands
	// of sessions need more.
	Heap string
	// ForceSync fsyncs the transaction log before acknowledging each write, as ZooKeeper
	// does by default; default false (forceSync=no), which tests want for speed.
	ForceSync bool
}

// Timeouts used when starting.
const (
	startTimeout  = 60 * time.Second // StartEnsemble and StartAll: until the ensemble serves
	startAttempts = 3                // fresh ports after a port collision
	pollInterval  = 50 * time.Millisecond
)

func (o Options) withDefaults() (Options, error) {
	if o.Servers == 0 {
		o.Servers = 1
	}
	if o.TickTime == 0 {
		o.TickTime = 500 * time.Millisecond
	}
	if o.InitLimit == 0 {
		o.InitLimit = 10
	}
	if o.SyncLimit == 0 {
		o.SyncLimit = 5
	}
	if o.Heap == "" {
		o.Heap = "256m"
	}
	switch {
	case o.Servers < 1:
		return o, fmt.Errorf("zktest: Options.Servers = %d, want >= 1", o.Servers)
	case o.TickTime < time.Millisecond || o.TickTime%time.Millisecond != 0:
		return o, fmt.Errorf("zktest: Options.TickTime = %v, want a positive whole number of milliseconds", o.TickTime)
	case o.InitLimit < 1 || o.SyncLimit < 1:
		return o, fmt.Errorf("zktest: Options.InitLimit = %d, SyncLimit = %d, want >= 1", o.InitLimit, o.SyncLimit)
	}
	return o, nil
}

// Ensemble is a set of real ZooKeeper servers on loopback with fresh data dirs. All
// methods are safe for concurrent use.
type Ensemble struct {
	opts    Options
	dir     string
	java    string
	cp      string
	members []*Member
	peers   map[pair]*peerLink // PeerProxies only

	closing chan struct{} // closed by Close

	mu       sync.Mutex
	closed   bool
	isolated map[int]bool
}

// Standalone starts one server with a 500 ms tick (sessions of 1 s to
// 10 s), stopped at the end of the test, and returns its connect string.
func Standalone(t testing.TB) string {
	t.Helper()
	return Start(t, Options{Servers: 1, TickTime: 500 * time.Millisecond}).ConnectString()
}

// Start starts an ensemble on free loopback ports with fresh data dirs, waits until it
// serves (standalone: srvr says standalone; ensemble: one leader and all others follower),
// and registers t.Cleanup to kill everything and remove the dirs (logging the tail of each
// server's log first if the test failed). It goes through Require first: skipped in -short
// mode, a failure naming the apt package when java or a jar is missing.
func Start(t testing.TB, opts Options) *Ensemble {
	t.Helper()
	Require(t)
	e, err := StartEnsemble(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range e.members {
				t.Logf("zktest: %s, last lines of %s:\n%s", m, m.logPath, m.logTail(30))
			}
		}
		e.Close()
	})
	return e
}

// Require is the gate of every test that needs real ZooKeeper or Java (Start and
// curatortest call it): in -short mode, which runs the unit tests alone, it skips t;
// otherwise a missing java or jar fails t with the apt package that installs it. It is
// never a skip in a full run.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("zktest: needs a real ZooKeeper (Java); skipped in -short mode")
	}
	if _, err := Classpath(); err != nil {
		t.Fatal(err)
	}
}

// StartEnsemble is Start for callers without a testing.TB (a chaos command, a demo): the
// caller must Close the ensemble.
func StartEnsemble(opts Options) (*Ensemble, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cp, err := Classpath()
	if err != nil {
		return nil, err
	}
	java, err := JavaPath()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		e, err := newEnsemble(opts, java, cp)
		if err != nil {
			return nil, err
		}
		err = e.startAndWait()
		if err == nil {
			return e, nil
		}
		e.Close()
		if !errors.Is(err, errPortCollision) || attempt == startAttempts {
			return nil, err
		}
	}
}

func newEnsemble(opts Options, java, cp string) (_ *Ensemble, err error) {
	dir, err := os.MkdirTemp("", "zktest-")
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	e := &Ensemble{
		opts:     opts,
		dir:      dir,
		java:     java,
		cp:       cp,
		closing:  make(chan struct{}),
		isolated: map[int]bool{},
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	for id := 1; id <= opts.Servers; id++ {
		m := &Member{e: e, id: id, dir: filepath.Join(dir, "server"+strconv.Itoa(id))}
		m.cfgPath = filepath.Join(m.dir, "zoo.cfg")
		m.logPath = filepath.Join(m.dir, "server.log")
		e.members = append(e.members, m)
		if m.client, err = reservePort(); err != nil {
			return nil, err
		}
		if opts.TLS != nil {
			if m.secure, err = reservePort(); err != nil {
				return nil, err
			}
		}
		if opts.Servers > 1 {
			if m.quorum, err = reservePort(); err != nil {
				return nil, err
			}
			if m.election, err = reservePort(); err != nil {
				return nil, err
			}
		}
	}
	if opts.PeerProxies && opts.Servers > 1 {
		if err := e.startPeerProxies(); err != nil {
			return nil, err
		}
	}
	for _, m := range e.members {
		if err := e.writeConfig(m); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Ensemble) writeConfig(m *Member) error {
	data := filepath.Join(m.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", e.opts.TickTime.Milliseconds())
	fmt.Fprintf(&b, "initLimit=%d\n", e.opts.InitLimit)
	fmt.Fprintf(&b, "syncLimit=%d\n", e.opts.SyncLimit)
	fmt.Fprintf(&b, "dataDir=%s\n", data)
	fmt.Fprintf(&b, "clientPort=%d\n", m.client.port)
	b.WriteString("clientPortAddress=127.0.0.1\n")
	b.WriteString("admin.enableServer=false\n")
	b.WriteString("4lw.commands.whitelist=*\n")
	b.WriteString("maxClientCnxns=0\n") // tests open many connections from one address
	if !e.opts.ForceSync {
		b.WriteString("forceSync=no\n") // no fsync per write: a killed JVM loses nothing, a crashed machine might
	}
	if e.opts.TLS != nil {
		b.WriteString(e.opts.TLS.config(m.secure.port))
	}
	if len(e.members) > 1 {
		for _, peer := range e.members {
			q, el := peer.quorum.addr(), peer.election.addr()
			if link := e.peers[pair{m.id, peer.id}]; link != nil {
				q, el = link.quorum.Addr(), link.election.Addr()
			}
			fmt.Fprintf(&b, "server.%d=%s:%s\n", peer.id, q, portOf(el))
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(m.id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("zktest: %w", err)
		}
	}
	if err := os.WriteFile(m.cfgPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	return nil
}

func portOf(addr string) string {
	return addr[strings.LastIndexByte(addr, ':')+1:]
}

func (e *Ensemble) jvmArgs(cfg string) []string {
	var stale []string
	if e.opts.RunStaleRequests {
		stale = []string{"-Dzookeeper.request_stale_connection_check=false"}
	}
	return append(stale,
		"-Xmx"+e.opts.Heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		// One line per four-letter word (WaitReady polls) is noise.
		"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.NIOServerCnxn=warn",
		"-cp", e.cp,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg,
	)
}

func (e *Ensemble) startAndWait() error {
	for _, m := range e.members {
		if err := m.Start(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return e.WaitReady(ctx)
}

func (e *Ensemble) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// Close kills every server and proxy and removes the data dirs. It is idempotent.
func (e *Ensemble) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	close(e.closing)
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range e.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.opMu.Lock() // after this, Start sees the ensemble closed
			defer m.opMu.Unlock()
			m.killLocked()
		}()
	}
	for _, link := range e.peers {
		wg.Add(2)
		go func() { defer wg.Done(); link.quorum.Close() }()
		go func() { defer wg.Done(); link.election.Close() }()
	}
	wg.Wait()
	for _, m := range e.members {
		for _, p := range m.ports() {
			if p != nil {
				p.release()
			}
		}
	}
	_ = os.RemoveAll(e.dir)
}

// Servers returns "127.0.0.1:<client port>" per member, in member order.
func (e *Ensemble) Servers() []string {
	out := make([]string, len(e.members))
	for i, m := range e.members {
		out[i] = m.Addr()
	}
	return out
}

// ConnectString returns Servers comma-joined.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Servers(), ",") }

// Members returns the members in id order.
func (e *Ensemble) Members() []*Member { return append([]*Member(nil), e.members...) }

// Member returns the member with server id id (1-based), or nil.
func (e *Ensemble) Member(id int) *Member {
	if id < 1 || id > len(e.members) {
		return nil
	}
	return e.members[id-1]
}

// TickTime returns the servers' tickTime.
func (e *Ensemble) TickTime() time.Duration { return e.opts.TickTime }

// Options returns the options the ensemble was started with, defaults filled in.
func (e *Ensemble) Options() Options { return e.opts }

// StopAll stops every member (SIGTERM, as Member.Stop) at once: a whole-ensemble outage.
func (e *Ensemble) StopAll() error {
	errs := make([]error, len(e.members))
	var wg sync.WaitGroup
	for i, m := range e.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.Stop()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StartAll starts every member that is not running, with the same config and data, and
// waits until the ensemble serves (as WaitReady, for up to a minute).
func (e *Ensemble) StartAll() error {
	return e.startAndWait()
}
