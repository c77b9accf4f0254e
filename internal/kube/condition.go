package kube

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// GateCondition is the pod condition type of the participant gate: the pod
// template's readinessGates names it (docs/design/kubernetes.md, "A
// readiness gate for the real multi-node case").
const GateCondition = "electd.io/participant"

// podCondition is one entry of a pod's status.conditions.
type podCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// podGate is what the gate reads of a pod: its version, whether it is
// being deleted, and the gate's condition ("" when the pod has none).
type podGate struct {
	resourceVersion string
	deleting        bool
	status          string
}

func podStatusPath(ns, pod string) string {
	return "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(pod) + "/status"
}

// gateOf reads the gate's condition of a pod.
func (c *client) gateOf(ctx context.Context, ns, pod string) (podGate, error) {
	var p struct {
		Metadata struct {
			ResourceVersion   string  `json:"resourceVersion"`
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
		Status struct {
			Conditions []podCondition `json:"conditions"`
		} `json:"status"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: podStatusPath(ns, pod)}, &p); err != nil {
		return podGate{}, err
	}
	g := podGate{resourceVersion: p.Metadata.ResourceVersion, deleting: p.Metadata.DeletionTimestamp != nil}
	for _, cond := range p.Status.Conditions {
		if cond.Type == GateCondition {
			g.status = cond.Status
		}
	}
	return g, nil
}

// setGate sets the gate's condition of a pod, only if the pod is still at
// resourceVersion rv (else 409 Conflict). It sends a strategic merge
// patch: conditions merge by type, so the kubelet's own stay. A JSON merge
// patch would replace the whole list.
func (c *client) setGate(ctx context.Context, ns, pod, rv string, cond podCondition, now time.Time) error {
	cond.Type, cond.LastTransitionTime = GateCondition, now.UTC().Format(time.RFC3339)
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": rv},
		"status":   map[string]any{"conditions": []podCondition{cond}},
	}
	return c.do(ctx, request{
		method:      http.MethodPatch,
		path:        podStatusPath(ns, pod) + "?fieldManager=electd",
		contentType: "application/strategic-merge-patch+json",
		body:        patch,
	}, nil)
}
