package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/electd/electd/tests/harness/nodetest"
	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// zooKeeperClaims are the volume claims zookeeper.yaml's StatefulSet makes
// (its template "data", three replicas), and zooKeeperUser the uid its
// servers run as.
var zooKeeperClaims = []string{"data-zookeeper-0", "data-zookeeper-1", "data-zookeeper-2"}

const zooKeeperUser = 1000

// WatchZooKeeperLeader records who leads the election at path as
// ZooKeeper itself says: the id stored in the participant node that sorts
// first (docs/design/election-and-lease.md, "Node layout"), "" while there is none. It asks the
// ensemble in ns by its servers' names, as electd does (podHosts), from
// inside the node's namespace, and runs until ctx ends.
//
// births records when each participant's node was made (its ctime, by
// ZooKeeper's clock, the node's own): an answer from the next leader
// before the watch saw it elected is judged by it (FromLeader).
func WatchZooKeeperLeader(ctx context.Context, n *nodetest.Node, ns, path string, tl *Timeline[string], births *Births) error {
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return n.Netns.DialContext(dctx, network, addr)
	}
	var servers []string
	for _, c := range zooKeeperClaims {
		pod := strings.TrimPrefix(c, "data-")
		servers = append(servers, fmt.Sprintf("%s.zookeeper-headless.%s.svc.%s:2181", pod, ns, nodetest.ClusterDomain))
	}
	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithDialer(dial), zk.WithLogInfo(false), zk.WithLogger(quietLog{}),
		zk.WithHostProvider(&podHosts{lookup: n.LookupHost}))
	if err != nil {
		return err
	}
	go func() {
		defer conn.Close()
		for ctx.Err() == nil {
			children, _, ch, err := conn.ChildrenW(path)
			if err != nil {
				// The path does not exist until the first participant makes it.
				tl.Set("")
				ok, _, ech, err := conn.ExistsW(path)
				if err == nil && !ok {
					select {
					case <-ech:
					case <-ctx.Done():
					}
				} else {
					sleep(ctx, 50*time.Millisecond)
				}
				continue
			}
			tl.Set(leaderOf(conn, path, children, births))
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
	}()
	return nil
}

// leaderOf reads the id of the first participant, "" if there is none,
// and records every participant node's ctime in births.
func leaderOf(conn *zk.Conn, path string, children []string, births *Births) string {
	var nodes []string
	for _, c := range children {
		if i := strings.LastIndex(c, "latch-"); i >= 0 && len(c)-i-len("latch-") == 10 {
			nodes = append(nodes, c)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return seq(nodes[i]) < seq(nodes[j]) })
	leader := ""
	for _, c := range nodes {
		data, st, err := conn.Get(path + "/" + c)
		if err != nil {
			// Gone since the listing: the next one leads; the watch fires too.
			continue
		}
		births.Add(string(data), time.UnixMilli(st.Ctime))
		if leader == "" {
			leader = string(data)
		}
	}
	return leader
}

// Births are the times each pod's participant nodes were made. Safe for
// concurrent use; the zero value is empty.
type Births struct {
	mu sync.Mutex
	m  map[string][]time.Time
}

// Add records a node of pod made at t, once.
func (b *Births) Add(pod string, t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string][]time.Time{}
	}
	if !slices.ContainsFunc(b.m[pod], t.Equal) {
		b.m[pod] = append(b.m[pod], t)
	}
}

// Before reports whether a node of pod had been made by t.
func (b *Births) Before(pod string, t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.ContainsFunc(b.m[pod], func(c time.Time) bool { return !c.After(t) })
}

// podHosts is a zk.HostProvider for the ensemble's servers by their pods'
// names, resolved through the cluster's DNS at every round, as electd's own
// provider does: a restarted server comes back at another address, and the
// client Service lists a server only once its readiness probe passed,
// seconds after electd, which names the pods, can use it.
type podHosts struct {
	lookup func(string) []string
	mu     sync.Mutex
	names  []string
	addrs  []string
	next   int
}

func (h *podHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names = servers
	h.resolve()
	return nil
}

func (h *podHosts) resolve() {
	h.addrs, h.next = nil, 0
	for _, s := range h.names {
		host, port, _ := net.SplitHostPort(s)
		for _, ip := range h.lookup(host) {
			h.addrs = append(h.addrs, net.JoinHostPort(ip, port))
		}
	}
}

func (h *podHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(len(h.addrs), 1)
}

// Next returns the next address; after the last one it resolves the names
// again and says so (retryStart), which makes the client pause a moment.
func (h *podHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	retry := false
	if h.next >= len(h.addrs) {
		h.resolve()
		retry = true
	}
	if len(h.addrs) == 0 {
		return "127.0.0.1:1", retry // nothing resolves yet: a refused dial
	}
	a := h.addrs[h.next]
	h.next++
	return a, retry
}

func (h *podHosts) Connected() {}

// quietLog drops go-zookeeper's connection errors: the ensemble's scenarios
// stop its servers on purpose, and the timeline records what matters.
type quietLog struct{}

func (quietLog) Printf(string, ...any) {}

func seq(name string) string { return name[len(name)-10:] }

// WatchLeaseHolder records a coordination.k8s.io Lease's holder, "" while
// it has none or has released it; an expired lease still names its last
// holder, as client-go's elector reads it.
func WatchLeaseHolder(ctx context.Context, n *nodetest.Node, ns, name string, tl *Timeline[string]) {
	go func() {
		for ctx.Err() == nil {
			err := n.Watch(ctx, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases?fieldSelector=metadata.name%3D"+name,
				func(typ string, obj json.RawMessage) bool {
					var l struct {
						Spec struct {
							HolderIdentity *string `json:"holderIdentity"`
						} `json:"spec"`
					}
					if typ == "DELETED" || json.Unmarshal(obj, &l) != nil || l.Spec.HolderIdentity == nil {
						tl.Set("")
						return true
					}
					tl.Set(*l.Spec.HolderIdentity)
					return true
				})
			if err != nil {
				sleep(ctx, 200*time.Millisecond)
			}
		}
	}()
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
