package execmode

import (
	"strconv"
	"strings"

	"github.com/electd/electd/internal/election"
)

// Variables the command finds in its environment, set from the status it
// starts in. This participant leads then, so the leader is itself.
const (
	EnvFencingToken  = "ELECTD_FENCING_TOKEN"  // pass it to storage with every write
	EnvLeaderID      = "ELECTD_LEADER_ID"      // this participant's id
	EnvLeaderNode    = "ELECTD_LEADER_NODE"    // its node, e.g. _c_<uuid>-latch-0000000003
	EnvLeaderSession = "ELECTD_LEADER_SESSION" // its ZooKeeper session, 0x...
	EnvElectionPath  = "ELECTD_ELECTION_PATH"  // election.path, as electd's own variable means it
	EnvHTTPAddr      = "ELECTD_HTTP_ADDR"      // http.addr: curl it, or run `electd status`
)

// commandEnv is base with the variables above set from st (replacing any
// of the same name in base).
func commandEnv(base []string, st election.Status, path, httpAddr string) []string {
	set := map[string]string{
		EnvFencingToken:  strconv.FormatInt(st.FencingToken, 10),
		EnvLeaderID:      st.ID,
		EnvLeaderNode:    st.Node,
		EnvLeaderSession: "0x" + strconv.FormatUint(uint64(st.SessionID), 16),
		EnvElectionPath:  path,
		EnvHTTPAddr:      httpAddr,
	}
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok {
			out = append(out, kv)
		}
	}
	for _, name := range []string{EnvFencingToken, EnvLeaderID, EnvLeaderNode, EnvLeaderSession, EnvElectionPath, EnvHTTPAddr} {
		out = append(out, name+"="+set[name])
	}
	return out
}
