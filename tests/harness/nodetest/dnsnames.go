package nodetest

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// names is what the cluster's DNS answers from: every Service and
// EndpointSlice, listed once and then watched, as CoreDNS's kubernetes
// plugin does, so that an answer never waits on the API server (a loaded
// one took seconds, and a name that exists must not be answered "no such
// name" meanwhile). Until both lists are in, it knows nothing (synced).
type names struct {
	mu       sync.RWMutex
	services map[string]corev1.Service            // by namespace/name
	slices   map[string]discoveryv1.EndpointSlice // by namespace/name
	synced   [2]bool
}

func newNames() *names {
	return &names{services: map[string]corev1.Service{}, slices: map[string]discoveryv1.EndpointSlice{}}
}

// follow keeps the names current until ctx ends.
func (nm *names) follow(ctx context.Context, n *Node) {
	go reflectInto(ctx, n, "/api/v1/services", func(ev change[corev1.Service]) {
		nm.mu.Lock()
		defer nm.mu.Unlock()
		ev.apply(nm.services)
		nm.synced[0] = true
	})
	go reflectInto(ctx, n, "/apis/discovery.k8s.io/v1/endpointslices", func(ev change[discoveryv1.EndpointSlice]) {
		nm.mu.Lock()
		defer nm.mu.Unlock()
		ev.apply(nm.slices)
		nm.synced[1] = true
	})
}

// object is what reflectInto follows.
type object interface {
	corev1.Service | discoveryv1.EndpointSlice
}

func keyOf[T object](o *T) string {
	switch v := any(o).(type) {
	case *corev1.Service:
		return v.Namespace + "/" + v.Name
	case *discoveryv1.EndpointSlice:
		return v.Namespace + "/" + v.Name
	}
	return ""
}

// change is a full list (listed) or one watch event's object.
type change[T object] struct {
	listed  bool
	list    []T
	obj     T
	deleted bool
}

// apply brings m, by namespace/name, up to date with the change.
func (c change[T]) apply(m map[string]T) {
	switch {
	case c.listed:
		clear(m)
		for i := range c.list {
			m[keyOf(&c.list[i])] = c.list[i]
		}
	case c.deleted:
		delete(m, keyOf(&c.obj))
	default:
		m[keyOf(&c.obj)] = c.obj
	}
}

// reflectInto lists path, hands the list over, then watches from the
// list's resourceVersion and hands each object over as it changes; when the
// watch ends (the API server closed it, or its version expired), it lists
// again.
func reflectInto[T object](ctx context.Context, n *Node, path string, apply func(change[T])) {
	for ctx.Err() == nil {
		var list struct {
			Metadata metav1.ListMeta `json:"metadata"`
			Items    []T             `json:"items"`
		}
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := n.getCtx(lctx, path, &list)
		cancel()
		if err != nil {
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		apply(change[T]{listed: true, list: list.Items})
		_ = n.Watch(ctx, path+"?allowWatchBookmarks=true&resourceVersion="+list.Metadata.ResourceVersion, func(typ string, raw json.RawMessage) bool {
			var o T
			if typ == "ERROR" || json.Unmarshal(raw, &o) != nil {
				return false // list again
			}
			if typ != "BOOKMARK" {
				apply(change[T]{obj: o, deleted: typ == "DELETED"})
			}
			return true
		})
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// lookup returns the IPv4 addresses of a name, whether it exists (a name
// may exist without addresses: a headless Service with no pod yet), and
// whether the names are known at all (known false: the DNS answers a
// server failure, which resolvers retry, never "no such name").
func (nm *names) lookup(name string) (ips []net.IP, found, known bool) {
	nm.mu.RLock()
	defer nm.mu.RUnlock()
	if !nm.synced[0] || !nm.synced[1] {
		return nil, false, false
	}
	rest, ok := strings.CutSuffix(strings.ToLower(strings.TrimSuffix(name, ".")), ".svc."+ClusterDomain)
	if !ok {
		return nil, false, true
	}
	labels := strings.Split(rest, ".")
	switch len(labels) {
	case 2: // <svc>.<ns>
		svc, ok := nm.services[labels[1]+"/"+labels[0]]
		if !ok {
			return nil, false, true
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			return []net.IP{net.ParseIP(svc.Spec.ClusterIP)}, true, true
		}
		return nm.endpoints(labels[1], labels[0], ""), true, true
	case 3: // <hostname>.<svc>.<ns>
		ips := nm.endpoints(labels[2], labels[1], labels[0])
		return ips, len(ips) > 0, true
	}
	return nil, false, true
}

// endpoints are the addresses a Service's EndpointSlices list (those of
// the pod with that hostname, if one is given). A headless Service with
// publishNotReadyAddresses lists pods that are not ready yet, which is how
// a StatefulSet's members find each other before they form a quorum.
func (nm *names) endpoints(ns, svc, hostname string) []net.IP {
	var ips []net.IP
	for _, s := range nm.slices {
		if s.Namespace != ns || s.Labels[discoveryv1.LabelServiceName] != svc {
			continue
		}
		for _, ep := range s.Endpoints {
			if hostname != "" && (ep.Hostname == nil || *ep.Hostname != hostname) {
				continue
			}
			if hostname == "" && ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				if ip := net.ParseIP(a).To4(); ip != nil {
					ips = append(ips, ip)
				}
			}
		}
	}
	return ips
}
