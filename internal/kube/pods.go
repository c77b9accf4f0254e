package kube

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// podMeta is what the Labeler reads of a pod.
type podMeta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// listLimit bounds one list. A leader removes the label from at most this
// many other pods per check; normally there is one at most.
const listLimit = 100

// partialMetadata asks for metadata only: the Labeler needs names and
// labels, not pod specs, and the answer stays small.
const partialMetadata = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"

// labelledPods lists the pods of the namespace that carry the label key,
// whatever its value.
func (c *client) labelledPods(ctx context.Context, ns, key string) ([]podMeta, error) {
	q := url.Values{"labelSelector": {key}, "limit": {strconv.Itoa(listLimit)}}
	var list struct {
		Items []struct {
			Metadata podMeta `json:"metadata"`
		} `json:"items"`
	}
	err := c.do(ctx, request{
		method: http.MethodGet,
		path:   "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods?" + q.Encode(),
		accept: partialMetadata,
	}, &list)
	if err != nil {
		return nil, err
	}
	pods := make([]podMeta, 0, len(list.Items))
	for _, it := range list.Items {
		pods = append(pods, it.Metadata)
	}
	return pods, nil
}

// setLabel sets the label on a pod to *value, or removes it when value is
// nil. It sends a JSON merge patch: a null removes a key, other labels
// stay.
func (c *client) setLabel(ctx context.Context, ns, pod, key string, value *string) error {
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}}
	return c.do(ctx, request{
		method:      http.MethodPatch,
		path:        "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(pod) + "?fieldManager=electd",
		contentType: "application/merge-patch+json",
		body:        patch,
	}, nil)
}
