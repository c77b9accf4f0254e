package e2e

import (
	"fmt"
	"slices"
	"time"
)

// lag is how late the test may see a change of leader, an endpoint or an
// answer (a watch's delivery): a pod answering within lag of its
// leadership is not counted against the flavour.
const lag = 250 * time.Millisecond

// Violations returns what broke a flavour's promises in [from, to]: more
// than one endpoint listed at once (OneEndpoint flavours), and a request
// answered by a pod that was not the leader then (FromLeader).
func (d *Deployment) Violations(from, to time.Time) []string {
	var v []string
	if d.F.OneEndpoint {
		for _, c := range d.EP.Ready.Between(from, to) {
			if c.Value.Len() > 1 {
				v = append(v, fmt.Sprintf("%s: %d endpoints at once: %s", c.At.Format("15:04:05.000"), c.Value.Len(), c.Value))
			}
		}
	}
	for _, a := range d.NonLeaderAnswers(from, to) {
		v = append(v, fmt.Sprintf("request sent %s answered by %s, not the leader then", a.Sent.Format("15:04:05.000"), a.Pod))
	}
	return v
}

// NonLeaderAnswers are the answers in [from, to] that FromLeader rejects.
func (d *Deployment) NonLeaderAnswers(from, to time.Time) []Answer {
	var out []Answer
	leaders := d.Leader.Between(time.Time{}, time.Now().Add(time.Hour))
	for _, a := range d.Probe.Between(from, to) {
		if a.Pod != "" && !FromLeader(a, leaders, &d.Births) {
			out = append(out, a)
		}
	}
	return out
}

// FromLeader judges whether answer a came from a pod that led, given the
// leaders as the watch saw them (every change, in order) and when each
// pod's nodes were made. The watch sees a change late (its delivery), so a
// pod is taken as leading from lag before the watch saw it until lag after
// the watch saw the next leader. Beyond that, the next leader may answer
// before the watch saw it elected: ZooKeeper elected it when its
// predecessor's node went, which the watch learns late. Its answer counts
// as the leader's if its own node existed by then and no other leader came
// between. An answer is stale when its pod's term had ended (the watch saw
// a later leader) before the request was sent, or its pod had no node yet.
func FromLeader(a Answer, leaders []Change[string], births *Births) bool {
	held := func(i int) (time.Time, time.Time) {
		end := time.Now().Add(time.Hour)
		if i+1 < len(leaders) {
			end = leaders[i+1].At
		}
		return leaders[i].At.Add(-lag), end.Add(lag)
	}
	current := -1 // the last leader, "" too, the watch saw before a was sent
	for i, c := range leaders {
		start, end := held(i)
		if c.Value == a.Pod && !start.After(a.Done) && !a.Sent.After(end) {
			return true
		}
		if !c.At.After(a.Sent) {
			current = i
		}
	}
	// The first leader seen after a was sent that differs from the one in
	// force then (a leaderless stretch in between is no leader).
	for i := current + 1; i < len(leaders); i++ {
		v := leaders[i].Value
		if v == "" {
			continue
		}
		return v == a.Pod && births.Before(a.Pod, a.Done)
	}
	return false
}

// Failover is what one disruption did, measured from its start (t0).
type Failover struct {
	Old, New string
	// Elected: the new leader held the election (ZooKeeper, or the Lease).
	// Endpoint: the EndpointSlice listed it (Ready). Service: a request
	// through the ClusterIP was first answered by it.
	Elected, Endpoint, Service time.Duration
	// NoEndpoint: the longest time the Service listed no ready endpoint.
	// Leaderless: the longest time the election had no leader at all.
	NoEndpoint, Leaderless      time.Duration
	Failed, Answered, NonLeader int // requests between t0 and end
	MaxEndpoints                int
	Changes                     int // leader changes after t0
}

// Measure computes a Failover for a disruption that started at t0, with
// old leading then, and settled by end with newLeader leading.
func (d *Deployment) Measure(t0, end time.Time, old, newLeader string) Failover {
	f := Failover{Old: old, New: newLeader}
	if at, ok := d.Leader.First(t0, func(l string) bool { return l == newLeader }); ok {
		f.Elected = at.Sub(t0)
	}
	if at, ok := d.EP.Ready.First(t0, func(e Endpoints) bool { return e.Has(newLeader) }); ok {
		f.Endpoint = at.Sub(t0)
	}
	if a, ok := d.Probe.FirstFrom(t0, newLeader); ok {
		f.Service = a.Done.Sub(t0)
	}
	f.NoEndpoint = d.EP.Ready.Longest(t0, end, func(e Endpoints) bool { return e.Len() == 0 })
	f.Leaderless = d.Leader.Longest(t0, end, func(l string) bool { return l == "" })
	for _, a := range d.Probe.Between(t0, end) {
		if a.Err != "" {
			f.Failed++
		} else {
			f.Answered++
		}
	}
	f.NonLeader = len(d.NonLeaderAnswers(t0, end))
	for _, c := range d.EP.Ready.Between(t0, end) {
		f.MaxEndpoints = max(f.MaxEndpoints, c.Value.Len())
	}
	prev := old
	for _, c := range d.Leader.Between(t0, end) {
		if c.Value != "" && c.Value != prev {
			f.Changes++
			prev = c.Value
		}
	}
	return f
}

// Stats are the median and maximum of a sample.
type Stats struct{ P50, Max time.Duration }

// StatsOf computes them; the median of an even count is the mean of the
// two middle values.
func StatsOf(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	return Stats{P50: s[(n-1)/2] + (s[n/2]-s[(n-1)/2])/2, Max: s[n-1]}
}

func (s Stats) String() string {
	return fmt.Sprintf("%s / %s", secs(s.P50), secs(s.Max))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
