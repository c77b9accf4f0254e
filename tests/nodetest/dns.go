package nodetest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"golang.org/x/net/dns/dnsmessage"
)

// ClusterDomain is the kubelet's clusterDomain: pods' resolv.conf searches
// <namespace>.svc.<ClusterDomain>, svc.<ClusterDomain> and <ClusterDomain>.
const ClusterDomain = "cluster.local"

// dnsTTL is what answers may be cached for: as CoreDNS's kubernetes
// plugin, 5 s, so a restarted pod's new address is found soon.
const dnsTTL = 5

// clusterDNS answers the A queries of the cluster's names as Kubernetes'
// DNS specification says, for what the shipped manifests use: a Service,
// <svc>.<ns>.svc.cluster.local (its ClusterIP; a headless one's endpoint
// addresses), and a pod behind a headless Service by its hostname,
// <hostname>.<svc>.<ns>.svc.cluster.local, which a StatefulSet's pods get
// (deploy/k8s/zookeeper.yaml's servers find each other so, and electd
// finds them). Names outside the cluster domain do not exist here: the node
// has no way out. It asks the API server for every query (no cache beyond
// the TTL the client keeps), over UDP on the node's address, where the
// kubelet's clusterDNS sends the pods.
type clusterDNS struct {
	n    *Node
	conn net.PacketConn

	// log gets one line per A query answered, with klog's timestamp (so
	// that ComponentLog reads it as "dns"): who asked, for what, and the
	// answer, which shows when a pod's resolver asked and what it was told.
	logMu sync.Mutex
	log   *os.File
}

// startDNS starts the cluster's DNS server inside the namespace; it serves
// until the node is closed.
func (n *Node) startDNS() error {
	c, err := n.Netns.ListenPacket("udp4", net.JoinHostPort(NodeIP, fmt.Sprint(DNSPort)))
	if err != nil {
		return fmt.Errorf("nodetest: the cluster's DNS: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(n.lay.logs, "dns.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.Close()
		return fmt.Errorf("nodetest: the cluster's DNS: %w", err)
	}
	n.dns = &clusterDNS{n: n, conn: c, log: f}
	go n.dns.serve()
	return nil
}

// LookupHost resolves a name of the cluster (a fully qualified
// <...>.svc.cluster.local) as the pods' DNS answers it, for a test client
// outside the pods.
func (n *Node) LookupHost(name string) []string {
	ips, _ := n.dns.lookup(name)
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func (d *clusterDNS) close() {
	if d != nil {
		d.conn.Close()
		d.logMu.Lock()
		d.log.Close()
		d.logMu.Unlock()
	}
}

// logQuery writes one answered query to the DNS log.
func (d *clusterDNS) logQuery(from net.Addr, name string, found bool, ips []net.IP) {
	answer := "NXDOMAIN"
	if found {
		answer = fmt.Sprint(ips)
	}
	host, _, _ := net.SplitHostPort(from.String())
	d.logMu.Lock()
	fmt.Fprintf(d.log, "I%s dns: %s asked %s: %s\n", time.Now().Format("0102 15:04:05.000000"), host, name, answer)
	d.logMu.Unlock()
}

func (d *clusterDNS) serve() {
	buf := make([]byte, 1500)
	for {
		nr, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		go d.answer(append([]byte(nil), buf[:nr]...), from)
	}
}

// answer answers one query; a malformed one gets no answer.
func (d *clusterDNS) answer(query []byte, from net.Addr) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return
	}
	q, err := p.Question()
	if err != nil {
		return
	}
	ips, found := d.lookup(q.Name.String())
	if q.Type == dnsmessage.TypeA {
		d.logQuery(from, q.Name.String(), found, ips)
	}
	rcode := dnsmessage.RCodeSuccess
	if !found {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{
		ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RCode: rcode,
	})
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return
	}
	if q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		for _, ip := range ips {
			var a dnsmessage.AResource
			copy(a.A[:], ip.To4())
			if b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}, a) != nil {
				return
			}
		}
	}
	msg, err := b.Finish()
	if err == nil {
		d.conn.WriteTo(msg, from)
	}
}

// lookup returns the IPv4 addresses of a name, and whether it exists (a
// name may exist without addresses: a headless Service with no pod yet).
func (d *clusterDNS) lookup(name string) ([]net.IP, bool) {
	rest, ok := strings.CutSuffix(strings.ToLower(strings.TrimSuffix(name, ".")), ".svc."+ClusterDomain)
	if !ok {
		return nil, false
	}
	labels := strings.Split(rest, ".")
	switch len(labels) {
	case 2: // <svc>.<ns>
		var svc corev1.Service
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if d.n.getCtx(ctx, "/api/v1/namespaces/"+labels[1]+"/services/"+labels[0], &svc) != nil {
			return nil, false
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			return []net.IP{net.ParseIP(svc.Spec.ClusterIP)}, true
		}
		return d.endpoints(labels[1], labels[0], ""), true
	case 3: // <hostname>.<svc>.<ns>
		ips := d.endpoints(labels[2], labels[1], labels[0])
		return ips, len(ips) > 0
	}
	return nil, false
}

// endpoints are the addresses a Service's EndpointSlices list (those of
// the pod with that hostname, if one is given). A headless Service with
// publishNotReadyAddresses lists pods that are not ready yet, which is how
// a StatefulSet's members find each other before they form a quorum.
func (d *clusterDNS) endpoints(ns, svc, hostname string) []net.IP {
	var list discoveryv1.EndpointSliceList
	sel := url.QueryEscape(discoveryv1.LabelServiceName + "=" + svc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := d.n.getCtx(ctx, "/apis/discovery.k8s.io/v1/namespaces/"+ns+"/endpointslices?labelSelector="+sel, &list); err != nil {
		return nil
	}
	var ips []net.IP
	for _, s := range list.Items {
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
