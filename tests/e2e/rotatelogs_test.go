//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodStates records each change of the app's pods as the API server
// shows them (phase, Ready, deletion, each container's state), one line
// per change, for a diagnosis of a rollout's order of events.
type PodStates struct {
	mu    sync.Mutex
	last  map[string]string // by pod name: the last line recorded
	lines []PodLine
}

// WatchPodStates records the app's pods' changes until ctx ends.
func (d *Deployment) WatchPodStates(ctx context.Context) *PodStates {
	ps := &PodStates{last: map[string]string{}}
	path := "/api/v1/namespaces/" + d.F.Namespace + "/pods?labelSelector=app.kubernetes.io%2Fname%3Dapp"
	go func() {
		for ctx.Err() == nil {
			err := d.N.Watch(ctx, path, func(typ string, obj json.RawMessage) bool {
				var p corev1.Pod
				if json.Unmarshal(obj, &p) == nil {
					ps.record(typ, p)
				}
				return true
			})
			if err != nil {
				sleep(ctx, 200*time.Millisecond)
			}
		}
	}()
	return ps
}

func (ps *PodStates) record(typ string, p corev1.Pod) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase=%s ready=%v", typ, p.Status.Phase, podReady(p))
	if p.DeletionTimestamp != nil {
		b.WriteString(" deleting")
	}
	for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		state := "waiting"
		switch {
		case s.State.Running != nil:
			state = "running"
		case s.State.Terminated != nil:
			state = fmt.Sprintf("exited(%d)", s.State.Terminated.ExitCode)
		}
		started := s.Started != nil && *s.Started
		fmt.Fprintf(&b, " %s=%s/started=%v/ready=%v/restarts=%d", s.Name, state, started, s.Ready, s.RestartCount)
	}
	line := b.String()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.last[p.Name] == line {
		return
	}
	ps.last[p.Name] = line
	ps.lines = append(ps.lines, PodLine{p.Name, LogLine{time.Now(), line}})
}

// Between returns the changes recorded within [from, to].
func (ps *PodStates) Between(from, to time.Time) []PodLine {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []PodLine
	for _, l := range ps.lines {
		if !l.At.Before(from) && !l.At.After(to) {
			out = append(out, l)
		}
	}
	return out
}

// electionLines are the electd log lines about the election's
// transitions and the application's state.
var electionLines = []string{`"elected"`, `"leader"`, "handing leadership", "could not hand", "withdrawing",
	"standing", "not standing", "shutting down", "shut down", "draining", "electd stopped", "starting electd",
	"session resumed", "session not resumed", "application", "revoked", "step"}

// transitions is what electd logged about the election within [from,
// to], every pod's, in time order, one line each (cut at 300 bytes).
func (d *Deployment) transitions(from, to time.Time) []string {
	var out []string
	for _, c := range d.Leader.Between(from, to) {
		out = append(out, fmt.Sprintf("+%7.3f s test: the leader is now %q", c.At.Sub(from).Seconds(), c.Value))
	}
	if d.Electd != nil {
		for _, l := range d.Electd.Between(from, to) {
			if line, ok := excerpt(l, from, 300, electionLines...); ok {
				out = append(out, line)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// keepLogs writes, where -e2e.logs names a directory, every line the
// followed logs hold within [from, to], the leader's and the ready
// endpoints' changes, in time order, to name.log there.
func (d *Deployment) keepLogs(name string, from, to time.Time, sources ...interface {
	Between(from, to time.Time) []PodLine
}) error {
	if *logsFlag == "" {
		return nil
	}
	var lines []PodLine
	for _, s := range sources {
		lines = append(lines, s.Between(from, to)...)
	}
	for _, c := range d.Leader.Between(from, to) {
		lines = append(lines, PodLine{"test", LogLine{c.At, "the leader is now " + c.Value}})
	}
	for _, c := range d.EP.Ready.Between(from, to) {
		lines = append(lines, PodLine{"test", LogLine{c.At, fmt.Sprintf("the ready endpoints are now %v", c.Value)}})
	}
	return writeLog(name, from, lines)
}

// excerpt is l as one line of a failure's excerpt, when its text holds
// one of keep: its time from t0, its pod, its text cut at max bytes.
func excerpt(l PodLine, t0 time.Time, max int, keep ...string) (string, bool) {
	for _, k := range keep {
		if strings.Contains(l.Text, k) {
			text := l.Text
			if len(text) > max {
				text = text[:max] + "..."
			}
			return fmt.Sprintf("+%7.3f s %s: %s", l.At.Sub(t0).Seconds(), l.Pod, text), true
		}
	}
	return "", false
}

// writeLog writes lines in time order, times from t0, to name.log in the
// -e2e.logs directory.
func writeLog(name string, t0 time.Time, lines []PodLine) error {
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].At.Before(lines[j].At) })
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "+%7.3f s %s %s: %s\n", l.At.Sub(t0).Seconds(), l.At.Format("15:04:05.000"), l.Pod, l.Text)
	}
	if err := os.MkdirAll(*logsFlag, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*logsFlag, name+".log"), []byte(b.String()), 0o644)
}
