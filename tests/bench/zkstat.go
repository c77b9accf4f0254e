package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/electd/electd/tests/zktest"
)

// packetsReceived sums zk_packets_received from mntr over the ensemble's
// members: every client request and ping a server read (four-letter words
// such as mntr itself are not counted; ZooKeeper reads them before its
// packet accounting).
func packetsReceived(ens *zktest.Ensemble) (int64, error) {
	var sum int64
	for _, m := range ens.Members() {
		n, err := mntrValue(m, "zk_packets_received")
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// mntrValue reads one integer counter from a server's mntr answer.
func mntrValue(m *zktest.Member, key string) (int64, error) {
	out, err := m.FourLetter("mntr")
	if err != nil {
		return 0, fmt.Errorf("mntr %s: %w", m, err)
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("mntr %s: no %s in %q", m, key, out)
}

// consLine matches one connection of a cons answer, e.g.
// " /127.0.0.1:51234[1](queued=0,recved=7,sent=8,sid=0x1000a2b3c4d0001,...".
var consLine = regexp.MustCompile(`recved=(\d+),sent=\d+,sid=(0x[0-9a-f]+)`)

// receivedBySession reads cons on every member: packets received per
// session id (hex, as ZooKeeper prints it) over the life of each connection.
func receivedBySession(ens *zktest.Ensemble) (map[string]int64, error) {
	out := map[string]int64{}
	for _, m := range ens.Members() {
		s, err := m.FourLetter("cons")
		if err != nil {
			return nil, fmt.Errorf("cons %s: %w", m, err)
		}
		for _, g := range consLine.FindAllStringSubmatch(s, -1) {
			n, _ := strconv.ParseInt(g[1], 10, 64)
			out[g[2]] += n
		}
	}
	return out, nil
}
