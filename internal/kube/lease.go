package kube

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// microTime is metav1.MicroTime on the wire: RFC 3339 with microseconds, UTC.
type microTime time.Time

const microTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

func (t microTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(microTimeLayout) + `"`), nil
}

func (t *microTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := time.Parse(`"`+time.RFC3339Nano+`"`, string(b))
	*t = microTime(v)
	return err
}

// leaseSpec is the part of coordination.k8s.io/v1 LeaseSpec electd writes.
// Fields are pointers: a nil field is left out of a patch, so it stays
// unchanged. leaseRelease sets an explicit null instead.
type leaseSpec struct {
	HolderIdentity       *string    `json:"holderIdentity,omitempty"`
	LeaseDurationSeconds *int32     `json:"leaseDurationSeconds,omitempty"`
	AcquireTime          *microTime `json:"acquireTime,omitempty"`
	RenewTime            *microTime `json:"renewTime,omitempty"`
	LeaseTransitions     *int32     `json:"leaseTransitions,omitempty"`
}

type leaseMeta struct {
	Name            string `json:"name,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

type lease struct {
	APIVersion string    `json:"apiVersion,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Metadata   leaseMeta `json:"metadata"`
	Spec       leaseSpec `json:"spec"`
}

func (l *lease) holder() string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func leasesPath(ns string) string {
	return "/apis/coordination.k8s.io/v1/namespaces/" + url.PathEscape(ns) + "/leases"
}

func (c *client) getLease(ctx context.Context, ns, name string) (*lease, error) {
	var l lease
	err := c.do(ctx, request{method: http.MethodGet, path: leasesPath(ns) + "/" + url.PathEscape(name)}, &l)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

func (c *client) createLease(ctx context.Context, ns, name string, spec leaseSpec) error {
	l := lease{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Metadata: leaseMeta{Name: name, Namespace: ns}, Spec: spec}
	return c.do(ctx, request{
		method:      http.MethodPost,
		path:        leasesPath(ns) + "?fieldManager=electd",
		contentType: "application/json",
		body:        l,
	}, nil)
}

// patchLease merges spec into the Lease only if it is still at
// resourceVersion rv; else the answer is 409 Conflict. A merge patch that
// carries metadata.resourceVersion is a compare-and-swap. Unlike an update
// (PUT) of this struct, it keeps fields electd does not know.
func (c *client) patchLease(ctx context.Context, ns, name, rv string, spec any) error {
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": rv}, "spec": spec}
	return c.do(ctx, request{
		method:      http.MethodPatch,
		path:        leasesPath(ns) + "/" + url.PathEscape(name) + "?fieldManager=electd",
		contentType: "application/merge-patch+json",
		body:        patch,
	}, nil)
}
