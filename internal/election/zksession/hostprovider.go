package zksession

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"
)

// hostProvider implements zk.HostProvider. Unlike go-zookeeper's default it
// never fails on a name that does not resolve yet (a ZooKeeper pod not yet
// scheduled): it skips it, and re-resolves every name after each round in
// which no server accepted us, so a rescheduled pod's new address is found.
// It also re-resolves as soon as an established connection is lost: the
// server that went may be a pod being replaced, and so may others since
// the last resolve, so their old addresses would only cost a dial timeout
// each (a rolling restart of the ensemble moves every server).
type hostProvider struct {
	log    *slog.Logger
	lookup func(ctx context.Context, host string) ([]string, error)

	mu      sync.Mutex
	servers []string          // as configured, host:port
	addrs   []string          // resolved ip:port
	hostFor map[string]string // resolved ip:port -> configured host:port
	curr    int
	tried   int    // dials since the last success or re-resolve
	up      string // the configured server of the connection established since the last resolve
}

func newHostProvider(log *slog.Logger) *hostProvider {
	return &hostProvider{log: log, lookup: net.DefaultResolver.LookupHost}
}

// Init never fails: unresolvable names are retried by Next.
func (hp *hostProvider) Init(servers []string) error {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.servers = append([]string(nil), servers...)
	hp.resolveLocked()
	hp.curr = -1
	return nil
}

func (hp *hostProvider) Len() int {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	if len(hp.addrs) == 0 {
		return len(hp.servers)
	}
	return len(hp.addrs)
}

// Next returns the next address; retryStart is true after a full round
// without success, which makes go-zookeeper back off for a second.
func (hp *hostProvider) Next() (string, bool) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	retry := false
	switch {
	case hp.up != "":
		// The first dial since a connection was lost: fresh addresses, and
		// on to the server after the one that went, at once.
		hp.resolveLocked()
		hp.curr = hp.before(hp.up)
		hp.tried, hp.up = 0, ""
	case hp.tried >= len(hp.addrs):
		if hp.tried > 0 || len(hp.addrs) == 0 {
			retry = true
		}
		hp.resolveLocked()
		hp.tried = 0
	}
	if len(hp.addrs) == 0 {
		// Nothing resolves: hand out a configured name so the dial fails
		// fast, and ask for the back-off.
		return hp.servers[0], true
	}
	hp.curr = (hp.curr + 1) % len(hp.addrs)
	hp.tried++
	return hp.addrs[hp.curr], retry
}

func (hp *hostProvider) Connected() {
	hp.mu.Lock()
	hp.tried = 0
	if hp.curr >= 0 && hp.curr < len(hp.addrs) {
		hp.up = hp.hostFor[hp.addrs[hp.curr]]
	}
	hp.mu.Unlock()
}

// before is the index of the last address resolved from server or from a
// server configured before it (-1 if none), so that Next goes on with the
// servers after it.
func (hp *hostProvider) before(server string) int {
	at := slices.Index(hp.servers, server)
	i := -1
	for j, a := range hp.addrs {
		if slices.Index(hp.servers, hp.hostFor[a]) <= at {
			i = j
		}
	}
	return i
}

// hostOf returns the configured host:port an address was resolved from,
// or address itself.
func (hp *hostProvider) hostOf(address string) string {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	if h, ok := hp.hostFor[address]; ok {
		return h
	}
	return address
}

func (hp *hostProvider) resolveLocked() {
	var out []string
	seen := map[string]bool{}
	hostFor := map[string]string{}
	for _, s := range hp.servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			continue
		}
		var ips []string
		if net.ParseIP(host) != nil {
			ips = []string{host}
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			ips, err = hp.lookup(ctx, host)
			cancel()
			if err != nil {
				hp.log.Warn("zookeeper server name does not resolve yet; will retry", "server", s, "err", err)
				continue
			}
		}
		for _, ip := range ips {
			a := net.JoinHostPort(ip, port)
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
				hostFor[a] = s
			}
		}
	}
	hp.addrs, hp.hostFor = out, hostFor
	if hp.curr >= len(out) {
		hp.curr = -1
	}
}
