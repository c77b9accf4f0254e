package kube

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/tests/harness/electdtest"
	"github.com/electd/electd/tests/harness/kubetest"
	"github.com/electd/electd/tests/harness/wait"
	"github.com/electd/electd/tests/harness/zktest"
)

// Deadlines. The label promises are in units of the recheck interval and
// the session timeout (4s here); the slack covers a busy machine.
const (
	electTimeout = 30 * time.Second // a new leader after a crash: session timeout + ZooKeeper + scheduling
	labelTimeout = 20 * time.Second // the label (and Lease) on the new leader once it leads: one round of calls
	exitTimeout  = 15 * time.Second
)

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper, kube-apiserver and electd processes; skipped with -short")
	}
}

// cluster3 starts ZooKeeper, the API server, the label flavour's RBAC and
// pods p0..p2, and electd for each pod with the Role's token.
type cluster3 struct {
	t     *testing.T
	zk    string
	path  string
	k     *kubeEnv
	token string
	ps    []*electdtest.Member
}

// start starts pod id's electd as c.ps[i].
func (c *cluster3) start(i int, id string) *electdtest.Member {
	c.ps[i] = startElectd(c.t, id, c.k.electdEnv(c.t, c.zk, c.path, id, c.token))
	return c.ps[i]
}

func (c *cluster3) others(not *electdtest.Member) []*electdtest.Member {
	return electdtest.Others(c.ps, not)
}

func (c *cluster3) index(p *electdtest.Member) int { return slices.Index(c.ps, p) }

// The leader label and the Lease follow leadership through every way a
// leader goes: a late label of a former leader, SIGTERM, SIGKILL, release
// and a lease lost while the process is stopped. Promises checked:
//   - whenever one participant leads, exactly its pod carries the label
//     and the Lease names it, within labelTimeout of its election;
//   - no read of the pods ever finds two labelled pods (a leader removes
//     the others' labels before it sets its own; a leader on its way out
//     removes its own before it deletes its node; a participant that lost
//     its lease never sets it again);
//   - a label written late on another pod is gone within one recheck
//     interval (2s) plus one round of calls;
//   - leaseTransitions counts the handoffs.
func TestE2ELabelFollowsLeadership(t *testing.T) {
	skipShort(t)
	c := &cluster3{t: t, path: "/e2e/label"}
	c.zk = zktest.Start(t, zktest.Options{Servers: 1}).ConnectString()
	c.k = setupKube(t, kubetest.Start(t), "label-e2e")
	c.token = c.k.tokenFile(t, c.k.sa) // never the admin's
	for i := range 3 {
		id := "p" + string(rune('0'+i))
		c.k.createPod(t, id)
		c.ps = append(c.ps, nil)
		c.start(i, id)
	}
	leader := electdtest.OneLeader(t, c.ps, electTimeout)
	took := c.k.onlyLabelled(t, leader.Name, labelTimeout)
	t.Logf("%s leads; only its pod labelled and the Lease holder %v later", leader.Name, took.Round(time.Millisecond))
	handoffs := 0

	t.Run("late label", func(t *testing.T) {
		f := c.others(leader)[0]
		c.k.setLabel(t, f.Name)
		took := wait.For(t, recheck+labelTimeout, "the late label on "+f.Name+" removed", func() bool {
			names, err := c.k.labelled()
			return err == nil && slices.Equal(names, []string{leader.Name})
		})
		t.Logf("a label written on %s was removed by %s %v later (recheck interval %v)", f.Name, leader.Name, took.Round(time.Millisecond), recheck)
		// The line follows the call that removed the label.
		wait.For(t, labelTimeout, leader.Name+"'s log line for removing the label from "+f.Name, func() bool {
			return leader.LogHas("other_pod=" + f.Name)
		})
	})

	t.Run("SIGTERM", func(t *testing.T) {
		mon := c.k.watch()
		old := leader
		old.Send(syscall.SIGTERM)
		leader = electdtest.OneLeader(t, c.others(old), electTimeout)
		took := c.k.onlyLabelled(t, leader.Name, labelTimeout)
		old.WaitExit(exitTimeout)
		mon.end(t, "SIGTERM")
		handoffs++
		t.Logf("%s -> %s; label and Lease on %s %v after it led", old.Name, leader.Name, leader.Name, took.Round(time.Millisecond))
		// The old leader removed its own label before it resigned.
		if !old.LogHas("removed the leader label from the own pod") || leader.LogHas("other_pod="+old.Name) {
			t.Errorf("%s's label was not removed by %s itself before it resigned", old.Name, old.Name)
		}
		c.start(c.index(old), old.Name)
	})

	t.Run("SIGKILL", func(t *testing.T) {
		mon := c.k.watch()
		old := leader
		old.Send(syscall.SIGKILL)
		old.WaitExit(exitTimeout)
		if names, err := c.k.labelled(); err != nil || !slices.Equal(names, []string{old.Name}) {
			t.Errorf("right after SIGKILL the labelled pods are %v (%v), want the dead leader's %s", names, err, old.Name)
		}
		leader = electdtest.OneLeader(t, c.others(old), electTimeout)
		took := c.k.onlyLabelled(t, leader.Name, labelTimeout)
		mon.end(t, "SIGKILL")
		handoffs++
		t.Logf("%s -> %s; stale label removed and own set %v after it led", old.Name, leader.Name, took.Round(time.Millisecond))
		if !leader.LogHasWithin("other_pod="+old.Name, 5*time.Second) {
			t.Errorf("the new leader %s did not log removing the stale label of %s", leader.Name, old.Name)
		}
		c.start(c.index(old), old.Name)
	})

	t.Run("release", func(t *testing.T) {
		mon := c.k.watch()
		old := leader
		if code, body := old.Request(http.MethodPost, "/leader/release", electdtest.AdminToken); code != http.StatusAccepted {
			t.Fatalf("POST /leader/release: %d %s", code, body)
		}
		wait.For(t, electTimeout, "a leader other than "+old.Name, func() bool {
			for _, p := range c.others(old) {
				if p.Leads() {
					leader = p
					return true
				}
			}
			return false
		})
		took := c.k.onlyLabelled(t, leader.Name, labelTimeout)
		mon.end(t, "release")
		handoffs++
		t.Logf("%s released -> %s; label and Lease %v after it led", old.Name, leader.Name, took.Round(time.Millisecond))
		if !old.Alive() || old.Leads() {
			t.Errorf("%s after release: alive %v, leads %v; want a live follower", old.Name, old.Alive(), old.Leads())
		}
	})

	t.Run("lease lost while stopped", func(t *testing.T) {
		mon := c.k.watch()
		old := leader
		removedOwn := old.LogCount("removed the leader label from the own pod")
		old.Send(syscall.SIGSTOP)
		leader = electdtest.OneLeader(t, c.others(old), electTimeout)
		took := c.k.onlyLabelled(t, leader.Name, labelTimeout)
		if !leader.LogHasWithin("other_pod="+old.Name, 5*time.Second) {
			t.Errorf("the new leader %s did not log removing the stopped leader %s's label", leader.Name, old.Name)
		}
		t.Logf("%s stopped -> %s; stale label removed and own set %v after it led", old.Name, leader.Name, took.Round(time.Millisecond))
		old.Send(syscall.SIGCONT)
		// The resumed process knows its lease is gone: it removes its own
		// label (already gone) and never sets it again.
		wait.For(t, electTimeout, old.Name+" back as a follower of "+leader.Name, func() bool {
			code, body := old.Request(http.MethodGet, "/leader", "")
			var v api.Leader
			return code == 200 && json.Unmarshal(body, &v) == nil && v.LeaderID() == leader.Name && !v.Self.IsLeader
		})
		wait.For(t, labelTimeout, old.Name+"'s own removal round", func() bool {
			return old.LogCount("removed the leader label from the own pod") > removedOwn
		})
		c.k.onlyLabelled(t, leader.Name, labelTimeout)
		mon.end(t, "lease lost")
		handoffs++
	})

	l, err := c.k.leaseNow()
	if err != nil {
		t.Fatal(err)
	}
	if l.Holder != leader.Name || l.Transitions != handoffs {
		t.Errorf("Lease %s: holder %q, leaseTransitions %d; want %s and %d (the handoffs)", c.k.lease, l.Holder, l.Transitions, leader.Name, handoffs)
	}
}

// electd runs with a TokenRequest token of the label flavour's
// ServiceAccount, never as admin. Promises checked: the Role denies what
// it does not grant; calls the API server refuses are logged and retried
// and never affect the election; a rotated token file is used on the next
// retry.
func TestE2ERBACAndCredentials(t *testing.T) {
	skipShort(t)
	zk := zktest.Start(t, zktest.Options{Servers: 1}).ConnectString()
	c := kubetest.Start(t)
	k := setupKube(t, c, "rbac-e2e")
	roleToken := k.tokenFile(t, k.sa)
	k.createPod(t, "p0")
	k.createPod(t, "p1")

	t.Run("the Role denies the rest", func(t *testing.T) {
		b, err := os.ReadFile(roleToken)
		if err != nil {
			t.Fatal(err)
		}
		tok := string(b)
		pods := "/api/v1/namespaces/" + k.ns + "/pods"
		if err := c.As(tok, http.MethodGet, pods, "", nil, nil); err != nil {
			t.Errorf("list pods with the Role's token: %v", err)
		}
		for what, call := range map[string][3]string{
			"get a pod":                 {http.MethodGet, pods + "/p0", ""},
			"delete a pod":              {http.MethodDelete, pods + "/p0", ""},
			"read secrets":              {http.MethodGet, "/api/v1/namespaces/" + k.ns + "/secrets", ""},
			"patch a pod elsewhere":     {http.MethodPatch, "/api/v1/namespaces/default/pods/x", `{"metadata":{"labels":{"a":"b"}}}`},
			"read another Lease":        {http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/" + k.ns + "/leases/other", ""},
			"create a Role (escalate)":  {http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/namespaces/" + k.ns + "/roles", `{"metadata":{"name":"x"},"rules":[]}`},
			"list pods cluster-wide":    {http.MethodGet, "/api/v1/pods", ""},
			"delete the Lease it keeps": {http.MethodDelete, "/apis/coordination.k8s.io/v1/namespaces/" + k.ns + "/leases/" + k.lease, ""},
		} {
			var body any
			ctype := ""
			if call[2] != "" {
				body, ctype = []byte(call[2]), "application/merge-patch+json"
				if call[0] == http.MethodPost {
					ctype = "application/json"
				}
			}
			err := c.As(tok, call[0], call[1], ctype, body, nil)
			if ae, ok := err.(*kubetest.APIError); !ok || ae.Code != http.StatusForbidden {
				t.Errorf("%s (%s %s) with the Role's token: %v, want 403", what, call[0], call[1], err)
			}
		}
	})

	path := "/e2e/rbac"
	t.Run("a refused Lease leaves label and election alone", func(t *testing.T) {
		// The Role grants get and patch on its one Lease only.
		env := append(k.electdEnv(t, zk, path, "p0", roleToken), "ELECTD_KUBERNETES_LEASE_NAME=not-granted")
		p := startElectd(t, "p0", env)
		electdtest.OneLeader(t, []*electdtest.Member{p}, electTimeout)
		wait.For(t, labelTimeout, "p0 labelled", func() bool {
			names, err := k.labelled()
			return err == nil && slices.Equal(names, []string{"p0"})
		})
		wait.For(t, labelTimeout, "the refused get of the Lease in p0's log", func() bool {
			return p.LogHas("op=get_lease") && p.LogHas("403 Forbidden")
		})
		if !p.Leads() {
			t.Error("p0 stopped leading over a refused API call")
		}
		p.Send(syscall.SIGTERM)
		p.WaitExit(exitTimeout)
		if names, _ := k.labelled(); len(names) != 0 {
			t.Errorf("labelled after p0's shutdown: %v", names)
		}
	})

	t.Run("a rotated token is used", func(t *testing.T) {
		if err := c.CreateServiceAccount(k.ns, "no-rights"); err != nil {
			t.Fatal(err)
		}
		tokFile := k.tokenFile(t, "no-rights")
		p := startElectd(t, "p1", k.electdEnv(t, zk, path, "p1", tokFile))
		electdtest.OneLeader(t, []*electdtest.Member{p}, electTimeout)
		wait.For(t, labelTimeout, "the refused list in p1's log", func() bool {
			return p.LogHas("op=list_pods") && p.LogHas("403 Forbidden")
		})
		if names, _ := k.labelled(); len(names) != 0 || !p.Leads() {
			t.Fatalf("with a token without rights: labelled %v, p1 leads %v; want none and true", names, p.Leads())
		}
		// The kubelet swaps the projected file atomically; so does this.
		b, err := os.ReadFile(roleToken)
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(filepath.Dir(tokFile), "..new")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, tokFile); err != nil {
			t.Fatal(err)
		}
		took := k.onlyLabelled(t, "p1", labelTimeout)
		t.Logf("labelled and Lease held %v after the token file was rotated", took.Round(time.Millisecond))
		if !p.LogHasWithin("kubernetes API call succeeds again", 5*time.Second) {
			t.Error("p1 did not log the recovery")
		}
	})
}
