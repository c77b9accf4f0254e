package e2e

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/electd/electd/tests/harness/nodetest"
)

// Endpoints are the pods a Service's EndpointSlices list, as one comparable
// value: their names, sorted, joined by commas.
type Endpoints string

// Pods lists the names.
func (e Endpoints) Pods() []string {
	if e == "" {
		return nil
	}
	return strings.Split(string(e), ",")
}

// Len is the number of pods.
func (e Endpoints) Len() int { return len(e.Pods()) }

// Has reports whether pod is listed.
func (e Endpoints) Has(pod string) bool {
	for _, p := range e.Pods() {
		if p == pod {
			return true
		}
	}
	return false
}

// EndpointWatch records a Service's endpoints as its EndpointSlices say:
// Ready, the endpoints a Service routes to, and Serving, those that are
// ready or serving while terminating (kube-proxy falls back on these when
// no endpoint is ready).
type EndpointWatch struct {
	Ready, Serving Timeline[Endpoints]
}

// WatchEndpoints follows the EndpointSlices of Service svc in ns until ctx
// ends.
func WatchEndpoints(ctx context.Context, n *nodetest.Node, ns, svc string) *EndpointWatch {
	w := &EndpointWatch{}
	var mu sync.Mutex
	slices := map[string]discoveryv1.EndpointSlice{}
	update := func() {
		ready, serving := map[string]bool{}, map[string]bool{}
		for _, s := range slices {
			for _, ep := range s.Endpoints {
				if ep.TargetRef == nil {
					continue
				}
				c := ep.Conditions
				if c.Ready != nil && *c.Ready {
					ready[ep.TargetRef.Name] = true
				}
				if c.Serving != nil && *c.Serving {
					serving[ep.TargetRef.Name] = true
				}
			}
		}
		w.Ready.Set(join(ready))
		w.Serving.Set(join(serving))
	}
	go func() {
		for ctx.Err() == nil {
			mu.Lock()
			clear(slices)
			mu.Unlock()
			err := n.Watch(ctx, "/apis/discovery.k8s.io/v1/namespaces/"+ns+"/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D"+svc,
				func(typ string, obj json.RawMessage) bool {
					var s discoveryv1.EndpointSlice
					if json.Unmarshal(obj, &s) != nil {
						return true
					}
					mu.Lock()
					defer mu.Unlock()
					if typ == "DELETED" {
						delete(slices, s.Name)
					} else {
						slices[s.Name] = s
					}
					update()
					return true
				})
			if err != nil {
				sleep(ctx, 200*time.Millisecond)
			}
		}
	}()
	return w
}

func join(set map[string]bool) Endpoints {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return Endpoints(strings.Join(names, ","))
}
