package election

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
