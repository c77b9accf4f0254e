package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/electdtest"
	"github.com/electd/electd/tests/wait"
	"github.com/electd/electd/tests/zktest"
)

// Two real electd processes with one id on a real ZooKeeper
// (docs/design/election-and-lease.md, "Duplicate ids"): the newer one says so in its log and
// on /readyz and stays out of the queue; `electd status` marks only the
// electd asked; once the older one leaves, the newer one joins and is
// ready.
func TestE2EDuplicateID(t *testing.T) {
	zk := zktest.Standalone(t)
	const path = "/e2e/dup"
	web1 := electdtest.StartMember(t, zk, path, "web-1", "latch")
	older := electdtest.StartMember(t, zk, path, "web-2", "latch")
	wait.For(t, 15*time.Second, "web-1 and web-2 queued", func() bool { return len(older.Queue()) == 2 })
	addr := electdtest.MustFreeAddr(t)
	newer := electdtest.StartT(t, electdtest.Spec{Name: "web-2-newer", Addr: addr,
		Args: electdtest.MemberArgs(zk, path, "web-2", "latch", addr)})

	if !newer.LogHasWithin("duplicate participant id", 15*time.Second) || !newer.LogHas("the pod name") {
		t.Fatalf("the newer web-2's log does not say it is a duplicate and what to do:\n%s", newer.LogTail(20))
	}
	var ready api.Ready
	wait.For(t, 10*time.Second, "the newer web-2's /readyz to give the duplicate", func() bool {
		st, b := newer.Fetch("/readyz")
		return st == http.StatusServiceUnavailable && json.Unmarshal(b, &ready) == nil &&
			strings.HasPrefix(ready.Reason, "duplicate id: ") && strings.Contains(ready.Reason, "the pod name")
	})
	if st, _ := older.Fetch("/readyz"); st != http.StatusOK {
		t.Errorf("the older web-2's /readyz: %d, want 200", st)
	}
	if n := len(older.Queue()); n != 2 {
		t.Errorf("%d participants queued, want 2: the newer web-2 must stay out", n)
	}

	// status on each web-2 marks only the one asked.
	_, stdout, _ := electdtest.Run(t, nil, "status", "--addr", older.Addr).Outcome()
	t.Logf("electd status on the older web-2:\n%s", stdout)
	if rows := asked(stdout); len(rows) != 1 || rows[0][2] != "web-2" {
		t.Errorf("rows marked as asked: %q, want web-2's alone", rows)
	}
	_, stdout, _ = electdtest.Run(t, nil, "status", "--addr", newer.Addr).Outcome()
	t.Logf("electd status on the newer web-2:\n%s", stdout)
	if rows := asked(stdout); len(rows) != 0 || !strings.Contains(stdout, "web-2 (asked) is not in the queue: duplicate id: ") {
		t.Errorf("status on the newer web-2 marks %q, or its footer lacks the duplicate:\n%s", rows, stdout)
	}

	// The older one leaves: the newer one claims the id and joins.
	older.Send(syscall.SIGTERM)
	if err := older.WaitExit(15 * time.Second); err != nil {
		t.Errorf("the older web-2's exit: %v", err)
	}
	wait.For(t, 15*time.Second, "the newer web-2 ready", func() bool {
		st, _ := newer.Fetch("/readyz")
		return st == http.StatusOK
	})
	if n := len(web1.Queue()); n != 2 {
		t.Errorf("%d participants queued, want web-1 and the newer web-2", n)
	}
}

// asked returns the rows of a status table marked as the electd asked.
func asked(stdout string) [][]string {
	var out [][]string
	for _, r := range rowRE.FindAllStringSubmatch(stdout, -1) {
		if r[3] != "" {
			out = append(out, r)
		}
	}
	return out
}
