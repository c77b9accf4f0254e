package nodetest

import (
	"fmt"
	"net"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func slice(ns, svc, name string, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
	return discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		Endpoints:  eps,
	}
}

func endpoint(hostname, ip string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Hostname: &hostname, Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
}

func fmtLookup(ips []net.IP, found, known bool) string {
	return fmt.Sprintf("%v found=%v known=%v", ips, found, known)
}

// The DNS answers from the lists it follows: nothing (a server failure,
// which resolvers retry) until both are in; a Service's ClusterIP; a
// headless Service's ready endpoints; a StatefulSet pod's address by its
// hostname, ready or not (publishNotReadyAddresses), and "no such name"
// once its pod is gone from the slice; changes and deletions as watched.
func TestNamesAnswerFromTheirLists(t *testing.T) {
	nm := newNames()
	const zk0 = "zookeeper-0.zookeeper-headless.ns.svc.cluster.local."
	if got := fmtLookup(nm.lookup(zk0)); got != "[] found=false known=false" {
		t.Fatalf("before the lists: %s, want not known", got)
	}
	change[corev1.Service]{listed: true, list: []corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.7"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "zookeeper-headless"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},
	}}.apply(nm.services)
	nm.synced[0] = true
	if _, _, known := nm.lookup(zk0); known {
		t.Fatal("known with the Services alone")
	}
	change[discoveryv1.EndpointSlice]{listed: true, list: []discoveryv1.EndpointSlice{
		slice("ns", "zookeeper-headless", "zk-a", endpoint("zookeeper-0", "10.0.0.1", true), endpoint("zookeeper-1", "10.0.0.2", false)),
		slice("other", "zookeeper-headless", "zk-b", endpoint("zookeeper-0", "10.9.9.9", true)),
	}}.apply(nm.slices)
	nm.synced[1] = true
	for name, want := range map[string]string{
		zk0: "[10.0.0.1] found=true known=true",
		"zookeeper-1.zookeeper-headless.ns.svc.cluster.local.": "[10.0.0.2] found=true known=true",
		"zookeeper-2.zookeeper-headless.ns.svc.cluster.local.": "[] found=false known=true",
		"zookeeper-headless.ns.svc.cluster.local.":             "[10.0.0.1] found=true known=true",
		"app.ns.svc.cluster.local.":                            "[10.96.0.7] found=true known=true",
		"nothing.ns.svc.cluster.local.":                        "[] found=false known=true",
		"example.com.":                                         "[] found=false known=true",
	} {
		if got := fmtLookup(nm.lookup(name)); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	// zookeeper-0's pod is replaced: gone, then back with a new address.
	change[discoveryv1.EndpointSlice]{obj: slice("ns", "zookeeper-headless", "zk-a", endpoint("zookeeper-1", "10.0.0.2", true))}.apply(nm.slices)
	if got := fmtLookup(nm.lookup(zk0)); got != "[] found=false known=true" {
		t.Errorf("while replaced: %s, want no such name", got)
	}
	change[discoveryv1.EndpointSlice]{obj: slice("ns", "zookeeper-headless", "zk-a", endpoint("zookeeper-0", "10.0.0.11", true), endpoint("zookeeper-1", "10.0.0.2", true))}.apply(nm.slices)
	if got := fmtLookup(nm.lookup(zk0)); got != "[10.0.0.11] found=true known=true" {
		t.Errorf("replaced: %s, want the new address", got)
	}
	change[discoveryv1.EndpointSlice]{obj: slice("ns", "zookeeper-headless", "zk-a"), deleted: true}.apply(nm.slices)
	if got := fmtLookup(nm.lookup(zk0)); got != "[] found=false known=true" {
		t.Errorf("slice deleted: %s, want no such name", got)
	}
}
