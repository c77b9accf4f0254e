package e2e

import (
	"context"
	"encoding/json"
	"net/url"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodLogs follows one container of every pod a label selector matches,
// each pod as it comes (a pod replaced under the same name is a new one):
// a server's log is kept after its pod is gone, so what a rolling restart's
// replaced servers said stays readable.
type PodLogs struct {
	mu   sync.Mutex
	logs map[string]podLog // by pod UID
}

type podLog struct {
	pod string
	lf  *LogFollower
}

// WatchPodLogs follows container of the pods selector matches in the
// flavour's namespace until ctx ends.
func (d *Deployment) WatchPodLogs(ctx context.Context, selector, container string) *PodLogs {
	pl := &PodLogs{logs: map[string]podLog{}}
	path := "/api/v1/namespaces/" + d.F.Namespace + "/pods?labelSelector=" + url.QueryEscape(selector)
	go func() {
		for ctx.Err() == nil {
			err := d.N.Watch(ctx, path, func(_ string, obj json.RawMessage) bool {
				var p corev1.Pod
				if json.Unmarshal(obj, &p) == nil && started(p, container) {
					pl.follow(ctx, d, p, container)
				}
				return true
			})
			if err != nil {
				sleep(ctx, 200*time.Millisecond)
			}
		}
	}()
	return pl
}

// started reports whether a pod's container (a native sidecar's among the
// init containers) has run: its log exists.
func started(p corev1.Pod, container string) bool {
	for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.Name == container && (s.State.Running != nil || s.State.Terminated != nil) {
			return true
		}
	}
	return false
}

func (pl *PodLogs) follow(ctx context.Context, d *Deployment, p corev1.Pod, container string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if _, ok := pl.logs[string(p.UID)]; ok {
		return
	}
	lf, err := d.FollowLog(ctx, p.Name, container)
	if err != nil {
		return // the next event of this pod tries again
	}
	pl.logs[string(p.UID)] = podLog{p.Name, lf}
}

// PodLine is one line of a followed log, with its pod's name.
type PodLine struct {
	Pod string
	LogLine
}

// Between returns every line logged within [from, to], of every pod, in
// time order.
func (pl *PodLogs) Between(from, to time.Time) []PodLine {
	pl.mu.Lock()
	var out []PodLine
	for _, l := range pl.logs {
		for _, line := range l.lf.Lines() {
			if !line.At.Before(from) && !line.At.After(to) {
				out = append(out, PodLine{l.pod, line})
			}
		}
	}
	pl.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}
