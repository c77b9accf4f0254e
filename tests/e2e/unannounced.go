package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The failures nobody announces (issue 38): the leader's electd SIGKILLed,
// the leader's pod cut off from everything, and a rolling restart with a
// new ZooKeeper credential. Each flavour's figures go into one table of the
// report, which the README and docs/kubernetes.md quote (quoteregions.go).

// The disruptions' names, as the table's second column says them.
const (
	crashName    = "electd SIGKILLed"
	cutOffName   = "cut off 30 s"
	rotationName = "credential rotated"
)

// Unannounced is what one such disruption did to a flavour.
type Unannounced struct {
	What string // crashName, cutOffName or rotationName
	F    Failover
	// Silent is the longest time in the disruption with no request
	// answered through the Service.
	Silent time.Duration
	// Unreached counts the failed requests whose connection reached no
	// electd: kube-proxy chose the address of a pod that nothing answers
	// (cut off) or whose electd is down (its port refuses while the kubelet
	// restarts it). No electd could hold them.
	Unreached int
	// Withdrawn is when the Service's ready endpoints stopped listing the
	// disrupted pod; 0 if they never did.
	Withdrawn time.Duration
}

// Silence is the longest stretch in [t0, end] with no request answered
// through the Service, by the answers' arrival.
func (d *Deployment) Silence(t0, end time.Time) time.Duration {
	var done []time.Time
	for _, a := range d.Probe.Between(t0, end) {
		if a.Err == "" {
			done = append(done, a.Done)
		}
	}
	slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
	longest, prev := time.Duration(0), t0
	for _, at := range append(done, end) {
		longest = max(longest, at.Sub(prev))
		prev = at
	}
	return longest
}

// unreached says whether a failed request never got a connection to an
// electd: its dial timed out (the SYN went to an address nothing answers),
// was refused (nothing listened there) or found no route.
func unreached(a Answer) bool {
	return a.Err != "" && !a.Connected
}

// kubeProxyLag is how long kube-proxy may still send to a pod whose state
// changed: the EndpointSlice's update and its rules' sync, about a second.
const kubeProxyLag = time.Second

// CrashFailures sorts the failed requests of a crash of the leader's
// electd into those the design allows and those it does not (each failure
// counts as failed either way). A connection the process had accepted
// dies with it, whatever holds the listening socket: allowed are the
// failures with a connection and no HTTP answer sent before dead, when
// the process was seen gone (in flight at the crash, as for any proxy
// that crashes). A listening socket dies with its process too, so what
// reaches the crashed pod until it serves again fails: allowed are the
// failures with no HTTP answer (refused, or reset with the dead process)
// sent before back plus kubeProxyLag. back is when the EndpointSlice
// listed the pod Ready again (the flavours whose one endpoint is that
// pod); the zero time allows none after dead (the proxy flavour, whose
// ports electd-hold keeps open). An HTTP error came from a live process:
// never allowed.
//
// kube-proxy's second is a typical figure, not its bound: under load its
// sync of the pod's return can come later, and a request sent meanwhile
// may find no rule at all for the Service (iptables mode restores its
// filter and nat tables apart). Such a request went to no pod
// (Answer.Untranslated), so it is allowed too while the pod has not yet
// answered since back; after that answer kube-proxy's rules were in place.
func CrashFailures(answers []Answer, dead, back time.Time) (allowed, late []Answer) {
	var served time.Time // the first answer sent after back
	for _, a := range answers {
		if a.Err == "" && !back.IsZero() && !a.Sent.Before(back) && (served.IsZero() || a.Sent.Before(served)) {
			served = a.Sent
		}
	}
	for _, a := range answers {
		if a.Err == "" {
			continue
		}
		inWindow := !back.IsZero() && a.Sent.Before(back.Add(kubeProxyLag))
		beforeRules := !back.IsZero() && a.Untranslated && (served.IsZero() || a.Sent.Before(served))
		inFlight := a.Connected && a.Sent.Before(dead)
		if !a.Responded && (inFlight || inWindow || beforeRules) {
			allowed = append(allowed, a)
		} else {
			late = append(late, a)
		}
	}
	return allowed, late
}

// Unannounced records a flavour's figures for one disruption.
func (r *Report) Unannounced(flavour string, u Unannounced) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unannounced[flavour] = append(r.unannounced[flavour], u)
}

// unannouncedHeader starts the table; KeptReport tells it from the delete
// table by it.
const unannouncedHeader = "| flavour | what happened to the leader's pod | leader changes | first answer from a new leader | longest time with no answer | failed requests (every 20 ms) | of those, never reached an electd | the pod out of the Service |"

// UnannouncedTable is every flavour's row per disruption, in the
// flavours' order; "" if none ran.
func (r *Report) UnannouncedTable(flavours []Flavour) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, f := range flavours {
		for _, u := range r.unannounced[f.Name] {
			answer := "-"
			// A rotation moves leadership by design: its first answer from the
			// last leader says nothing of a failure.
			if u.F.Changes > 0 && u.F.Service > 0 && u.What != rotationName {
				answer = secs(u.F.Service)
			}
			out := "-"
			if u.Withdrawn > 0 {
				out = secs(u.Withdrawn)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %d | %d | %s |\n", f.Name, u.What, u.F.Changes, answer, secs(u.Silent), u.F.Failed, u.Unreached, out)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return unannouncedHeader + "\n|---|---|---|---|---|---|---|---|\n" + b.String() +
		"\nFrom the disruption's start (the SIGKILL, the first dropped packet, the Secret's change) until the flavour was at rest again; \"-\": leadership did not move, or the pod stayed listed.\n"
}

// withdrawn is how long after t0 the ready endpoints first left pod out
// while it was listed at t0; 0 if it was not listed or never left.
func (d *Deployment) withdrawn(t0 time.Time, pod string) time.Duration {
	if at, ok := d.EP.Ready.At(t0); !ok || !at.Has(pod) {
		return 0
	}
	if at, ok := d.EP.Ready.First(t0, func(e Endpoints) bool { return !e.Has(pod) }); ok {
		return at.Sub(t0)
	}
	return 0
}
