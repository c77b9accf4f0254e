// A model of NetworkPolicy ingress, shared by the manifests' tests here
// and the node tests (tests/e2e), which check the policies as applied
// against the ports the flavours' pods listen on: no network plugin on the
// test machines enforces policies (docs/kubernetes.md, "NetworkPolicies").

package k8s

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Source is where a connection comes from, as NetworkPolicy sees it.
type Source struct {
	Node      bool       // the destination pod's own node: the kubelet's probes
	Namespace labels.Set // its namespace's labels
	Pod       labels.Set // the pod's labels
}

// Destination is the pod a connection goes to.
type Destination struct {
	Namespace labels.Set // its namespace's labels
	Pod       labels.Set
	Spec      *corev1.PodSpec // for named ports
}

// Admits replays NetworkPolicy ingress for one TCP connection from src to
// port of dst (NetworkPolicySpec.ingress): allowed when no policy of dst's
// namespace selects the pod, when it comes from the pod's own node, or when
// a rule of a policy that selects the pod admits both source and port.
// pols are the policies of dst's namespace. Connections within the pod
// (localhost) are not modelled: no policy applies to them. ipBlock peers
// are refused (pod addresses are not modelled).
func Admits(pols []*networkingv1.NetworkPolicy, src Source, dst Destination, port int32) (bool, error) {
	if src.Node {
		return true, nil
	}
	isolated := false
	for _, p := range pols {
		sel, err := selects(&p.Spec.PodSelector, dst.Pod)
		if err != nil || !sel || !hasIngress(p) {
			if err != nil {
				return false, fmt.Errorf("NetworkPolicy %s: %w", p.Name, err)
			}
			continue
		}
		isolated = true
		for _, r := range p.Spec.Ingress {
			from, err := fromMatches(r.From, src, dst)
			if err != nil {
				return false, fmt.Errorf("NetworkPolicy %s: %w", p.Name, err)
			}
			if from && portMatches(r.Ports, dst.Spec, port) {
				return true, nil
			}
		}
	}
	return !isolated, nil
}

func selects(sel *metav1.LabelSelector, set labels.Set) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, fmt.Errorf("selector %v: %w", sel, err)
	}
	return s.Matches(set), nil
}

// hasIngress: a policy without policyTypes always restricts ingress.
func hasIngress(p *networkingv1.NetworkPolicy) bool {
	if len(p.Spec.PolicyTypes) == 0 {
		return true
	}
	for _, pt := range p.Spec.PolicyTypes {
		if pt == networkingv1.PolicyTypeIngress {
			return true
		}
	}
	return false
}

// fromMatches: no peers admit every source; a podSelector alone means the
// policy's (the destination's) namespace; a namespaceSelector the pods of
// the namespaces it matches.
func fromMatches(peers []networkingv1.NetworkPolicyPeer, src Source, dst Destination) (bool, error) {
	if len(peers) == 0 {
		return true, nil
	}
	for _, p := range peers {
		if p.IPBlock != nil {
			return false, fmt.Errorf("ipBlock peers are not modelled (pod addresses are not known)")
		}
		nsOK := labels.Equals(src.Namespace, dst.Namespace)
		if p.NamespaceSelector != nil {
			ok, err := selects(p.NamespaceSelector, src.Namespace)
			if err != nil {
				return false, err
			}
			nsOK = ok
		}
		podOK := true
		if p.PodSelector != nil {
			ok, err := selects(p.PodSelector, src.Pod)
			if err != nil {
				return false, err
			}
			podOK = ok
		}
		if nsOK && podOK {
			return true, nil
		}
	}
	return false, nil
}

// portMatches resolves named ports against the destination pod's
// containers, as the network plugin does.
func portMatches(ports []networkingv1.NetworkPolicyPort, spec *corev1.PodSpec, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		n := p.Port.IntVal
		if p.Port.StrVal != "" {
			n = NamedPort(spec, p.Port.StrVal)
		}
		end := n
		if p.EndPort != nil {
			end = *p.EndPort
		}
		if port >= n && port <= end {
			return true
		}
	}
	return false
}

// NamedPort is the container port a pod names name (init containers
// included), -1 when none does.
func NamedPort(spec *corev1.PodSpec, name string) int32 {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, cp := range c.Ports {
				if cp.Name == name {
					return cp.ContainerPort
				}
			}
		}
	}
	return -1
}
