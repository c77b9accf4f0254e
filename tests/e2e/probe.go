package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electd/electd/tests/harness/nodetest"
)

// Answer is one request through a Service: when it was sent and answered,
// and the pod that answered (the example app answers with its pod name),
// or the error (an answer other than 200: its status and body).
type Answer struct {
	Sent, Done time.Time
	Pod        string
	Err        string
	// Connected: the request got a connection (its dial completed); a
	// failed request without one never reached a pod's listener.
	Connected bool
	// Responded: an HTTP answer came, so a live electd or app gave it; a
	// failure with one is never the network's.
	Responded bool
	// Untranslated: the connection found no route and conntrack kept its
	// reply source as the Service's own address: kube-proxy sent it to no
	// pod, so no electd could have held it.
	Untranslated bool
}

// Prober sends a GET to a Service's ClusterIP every Interval from inside
// the node's namespace, each on a new connection (so kube-proxy's current
// rules pick the endpoint), and keeps every answer.
type Prober struct {
	mu      sync.Mutex
	answers []Answer
}

// Probe starts a prober of url that runs until ctx ends. At most 1024
// requests are outstanding, more than a request every 20 ms sends within
// the longest timeout (the proxy flavour's 19 s): requests the Service
// holds through a crash are all sent and counted, none skipped.
func Probe(ctx context.Context, n *nodetest.Node, url string, interval, timeout time.Duration) *Prober {
	p := &Prober{}
	client := n.HTTPClient(timeout)
	slots := make(chan struct{}, 1024)
	go every(ctx, interval, func() {
		select {
		case slots <- struct{}{}:
		default:
			return
		}
		go func() {
			defer func() { <-slots }()
			a := Answer{Sent: time.Now()}
			var connected atomic.Bool
			trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
			if err != nil {
				panic(err) // url was parsed when the Deployment was made
			}
			resp, err := client.Do(req)
			a.Connected = connected.Load()
			if err == nil {
				a.Responded = true
				b, rerr := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				switch {
				case rerr != nil:
					err = rerr
				case resp.StatusCode != 200:
					// The body says why (the proxy's 503 names what it
					// held the request for): the evidence of a failure.
					a.Err = resp.Status
					if why := strings.TrimSpace(string(b)); why != "" {
						a.Err += ": " + why
					}
				default:
					a.Pod = strings.TrimSpace(string(b))
				}
			}
			if err != nil {
				a.Err = err.Error()
				if strings.Contains(a.Err, "connect: no route to host") {
					var why string
					why, a.Untranslated = unrouted(n, url)
					a.Err += "; " + why
				}
			}
			a.Done = time.Now()
			if ctx.Err() != nil && a.Err != "" {
				return // cut short by the end of the probe, not by the Service
			}
			p.mu.Lock()
			p.answers = append(p.answers, a)
			p.mu.Unlock()
		}()
	})
	return p
}

// Between returns the answers to requests sent in [from, to].
func (p *Prober) Between(from, to time.Time) []Answer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return within(p.answers, func(a Answer) time.Time { return a.Sent }, from, to)
}

// FirstFrom returns the first answer sent at or after from that pod gave.
func (p *Prober) FirstFrom(from time.Time, pod string) (Answer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best Answer
	found := false
	for _, a := range p.answers {
		if a.Pod == pod && !a.Sent.Before(from) && (!found || a.Done.Before(best.Done)) {
			best, found = a, true
		}
	}
	return best, found
}

// unrouted says where the node sent a connection that found no route: the
// connections to the Service's address that conntrack still has
// unanswered (their reply source is the pod address kube-proxy chose) and
// the neighbour entries that failed. untranslated: one of them kept the
// Service's address as its reply source, so kube-proxy had no rule for it
// and the node looked for the Service's address itself on its link.
func unrouted(n *nodetest.Node, rawURL string) (why string, untranslated bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "conntrack: " + err.Error(), false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := n.Netns.CommandContext(ctx, "conntrack", "-L", "-p", "tcp", "-d", u.Hostname()).CombinedOutput()
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "UNREPLIED") && len(lines) < 5 {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
			untranslated = untranslated || notTranslated(l, u.Hostname())
		}
	}
	if err != nil {
		lines = append(lines, "conntrack: "+err.Error())
	}
	neigh, _ := n.Netns.CommandContext(ctx, "ip", "neigh", "show", "nud", "failed").CombinedOutput()
	return fmt.Sprintf("conntrack unreplied: [%s]; failed neighbours: [%s]",
		strings.Join(lines, " | "), strings.Join(strings.Fields(string(neigh)), " ")), untranslated
}

// notTranslated says whether a conntrack line's reply tuple comes from
// host itself: no DNAT was applied to that connection.
func notTranslated(line, host string) bool {
	_, reply, ok := strings.Cut(line, "[UNREPLIED]")
	return ok && strings.HasPrefix(strings.TrimSpace(reply), "src="+host+" ")
}
