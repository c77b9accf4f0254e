package nodetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

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
// has no way out. It answers from what it watches of the API server
// (dnsnames.go), over UDP on the node's address, where the kubelet's
// clusterDNS sends the pods.
type clusterDNS struct {
	names  *names
	conn   net.PacketConn
	cancel context.CancelFunc

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
	ctx, cancel := context.WithCancel(context.Background())
	n.dns = &clusterDNS{names: newNames(), conn: c, cancel: cancel, log: f}
	n.dns.names.follow(ctx, n)
	go n.dns.serve()
	return nil
}

// LookupHost resolves a name of the cluster (a fully qualified
// <...>.svc.cluster.local) as the pods' DNS answers it, for a test client
// outside the pods.
func (n *Node) LookupHost(name string) []string {
	ips, _, _ := n.dns.names.lookup(name)
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func (d *clusterDNS) close() {
	if d != nil {
		d.cancel()
		d.conn.Close()
		d.logMu.Lock()
		d.log.Close()
		d.logMu.Unlock()
	}
}

// logQuery writes one answered query to the DNS log.
func (d *clusterDNS) logQuery(from net.Addr, name string, found, known bool, ips []net.IP) {
	answer := "NXDOMAIN"
	switch {
	case !known:
		answer = "SERVFAIL (the API server's lists not in yet)"
	case found:
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
	ips, found, known := d.names.lookup(q.Name.String())
	if q.Type == dnsmessage.TypeA {
		d.logQuery(from, q.Name.String(), found, known, ips)
	}
	rcode := dnsmessage.RCodeSuccess
	switch {
	case !known:
		rcode = dnsmessage.RCodeServerFailure
	case !found:
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
