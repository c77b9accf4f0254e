package zksession

import (
	"context"
	"errors"
	"log/slog"
	"testing"
)

func TestHostProviderSkipsUnresolvableAndReResolves(t *testing.T) {
	known := map[string][]string{"zk-0.zk": {"10.0.0.1"}}
	hp := newHostProvider(slog.New(slog.DiscardHandler))
	hp.lookup = func(_ context.Context, host string) ([]string, error) {
		if ips, ok := known[host]; ok {
			return ips, nil
		}
		return nil, errors.New("no such host")
	}
	if err := hp.Init([]string{"zk-0.zk:2181", "zk-1.zk:2181", "127.0.0.1:2182"}); err != nil {
		t.Fatalf("Init with an unresolvable name failed: %v", err)
	}
	seen := map[string]bool{}
	for i := 0; i < 2; i++ {
		addr, retry := hp.Next()
		if retry {
			t.Fatalf("Next #%d asked for a retry before a full round", i)
		}
		seen[addr] = true
	}
	if !seen["10.0.0.1:2181"] || !seen["127.0.0.1:2182"] || len(seen) != 2 {
		t.Fatalf("first round = %v, want the two resolvable servers", seen)
	}
	// zk-1 gets scheduled; the next round must find it.
	known["zk-1.zk"] = []string{"10.0.0.2"}
	seen = map[string]bool{}
	addr, retry := hp.Next()
	if !retry {
		t.Fatalf("Next after a failed round did not ask for the back-off")
	}
	seen[addr] = true
	for i := 0; i < 2; i++ {
		addr, _ = hp.Next()
		seen[addr] = true
	}
	if !seen["10.0.0.2:2181"] {
		t.Fatalf("second round = %v, want the newly resolvable zk-1", seen)
	}
}

func TestHostProviderNothingResolves(t *testing.T) {
	hp := newHostProvider(slog.New(slog.DiscardHandler))
	hp.lookup = func(context.Context, string) ([]string, error) { return nil, errors.New("nope") }
	if err := hp.Init([]string{"a.invalid:2181"}); err != nil {
		t.Fatalf("Init = %v, want nil", err)
	}
	addr, retry := hp.Next()
	if addr != "a.invalid:2181" || !retry {
		t.Fatalf("Next = %q, %v; want the configured name and a back-off", addr, retry)
	}
}

func TestHostProviderConnectedResetsRound(t *testing.T) {
	hp := newHostProvider(slog.New(slog.DiscardHandler))
	_ = hp.Init([]string{"127.0.0.1:1", "127.0.0.1:2"})
	hp.Next()
	hp.Connected()
	for i := 0; i < 2; i++ {
		if _, retry := hp.Next(); retry {
			t.Fatalf("Next #%d after Connected asked for a back-off", i)
		}
	}
}

// A lost connection re-resolves every name before the next dial: in a
// rolling restart the server that went, and others restarted meanwhile,
// have new addresses, and a dial to an old one costs a timeout. The next
// dial goes to the server after the one lost, without the back-off.
func TestHostProviderReResolvesWhenAConnectionIsLost(t *testing.T) {
	known := map[string][]string{"zk-0.zk": {"10.0.0.1"}, "zk-1.zk": {"10.0.0.2"}, "zk-2.zk": {"10.0.0.3"}}
	lookups := 0
	hp := newHostProvider(slog.New(slog.DiscardHandler))
	hp.lookup = func(_ context.Context, host string) ([]string, error) {
		lookups++
		if ips, ok := known[host]; ok {
			return ips, nil
		}
		return nil, errors.New("no such host")
	}
	_ = hp.Init([]string{"zk-0.zk:2181", "zk-1.zk:2181", "zk-2.zk:2181"})
	if addr, _ := hp.Next(); addr != "10.0.0.1:2181" {
		t.Fatalf("first dial to %s, want zk-0", addr)
	}
	hp.Connected()
	// zk-2 was restarted meanwhile (a new address), zk-0 is being replaced
	// (its name does not resolve while it has no pod).
	known["zk-2.zk"] = []string{"10.0.0.13"}
	delete(known, "zk-0.zk")
	before := lookups
	addr, retry := hp.Next()
	if lookups-before != 3 {
		t.Errorf("the first dial after the loss looked up %d names, want all 3", lookups-before)
	}
	if addr != "10.0.0.2:2181" || retry {
		t.Fatalf("first dial after the loss = %s (back-off %v), want zk-1 at once", addr, retry)
	}
	if addr, _ := hp.Next(); addr != "10.0.0.13:2181" {
		t.Fatalf("second dial after the loss = %s, want zk-2's new address", addr)
	}
	// A full round failed: the back-off, and zk-0's new pod found.
	known["zk-0.zk"] = []string{"10.0.0.11"}
	seen := map[string]bool{}
	addr, retry = hp.Next()
	if !retry {
		t.Error("Next after a failed round did not ask for the back-off")
	}
	seen[addr] = true
	for range 2 {
		addr, _ := hp.Next()
		seen[addr] = true
	}
	if !seen["10.0.0.11:2181"] || seen["10.0.0.1:2181"] || seen["10.0.0.3:2181"] {
		t.Errorf("the round after = %v, want the new addresses alone", seen)
	}
}

// Losing the last server of the list goes on with the first.
func TestHostProviderLossOfTheLastServerWraps(t *testing.T) {
	hp := newHostProvider(slog.New(slog.DiscardHandler))
	_ = hp.Init([]string{"127.0.0.1:1", "127.0.0.1:2"})
	hp.Next()
	hp.Next()
	hp.Connected()
	if addr, retry := hp.Next(); addr != "127.0.0.1:1" || retry {
		t.Fatalf("after losing the last server: %s (back-off %v), want the first at once", addr, retry)
	}
}
