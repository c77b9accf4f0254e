package bench

import (
	"fmt"

	"github.com/electd/electd/tests/harness/zktest"
)

// receivedBySession reads cons on every member: packets received per
// session id (hex, as ZooKeeper prints it) over the life of each connection.
func receivedBySession(ens *zktest.Ensemble) (map[string]int64, error) {
	conns, err := ens.Conns()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, c := range conns {
		out[fmt.Sprintf("0x%x", c.Session)] += c.Received
	}
	return out, nil
}
