package election

import (
	"encoding/json"
	"testing"

	"github.com/electd/electd/third_party/go-zookeeper/zk"
)

// The meta node carries the proxy address (docs/design/proxy.md, "Forwarding")
// beside the advertise data; the election node's data stays the bare id,
// so Curator peers see nothing new.
func TestMetaPublishesProxy(t *testing.T) {
	u := newUnit(t, Config{Advertise: "http://10.0.0.7:8080", Proxy: "10.0.0.7:4041"})
	u.settle()
	data, _, err := u.f.Get("/e.advertise/" + sessionHex(unitSession))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("meta node %q: %v", data, err)
	}
	if got, want := m["proxy"], "10.0.0.7:4041"; got != want {
		t.Fatalf("meta proxy = %q, want %q (meta %s)", got, want, data)
	}
	own := u.ours()
	node, _, err := u.f.Get("/e/" + own[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(node), "me"; got != want {
		t.Fatalf("election node data = %q, want the bare id %q", got, want)
	}
	st := u.wantLeader(true)
	if got, want := st.Proxy, "10.0.0.7:4041"; got != want {
		t.Fatalf("Status.Proxy = %q, want %q", got, want)
	}
	if st.Leader == nil || st.Leader.Proxy != "10.0.0.7:4041" {
		t.Fatalf("leader %+v, want its proxy 10.0.0.7:4041", st.Leader)
	}
}

// Without a proxy the meta node is what older versions wrote.
func TestMetaWithoutProxyOmitsIt(t *testing.T) {
	u := newUnit(t, Config{Advertise: "a"})
	u.settle()
	data, _, err := u.f.Get("/e.advertise/" + sessionHex(unitSession))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), `{"id":"me","advertise":"a"}`; got != want {
		t.Fatalf("meta node = %s, want %s", got, want)
	}
}

// A follower learns the leader's proxy from the leader's meta node; a
// leader without one (a Curator client, an older electd) has none.
func TestFollowerSeesLeaderProxy(t *testing.T) {
	for _, tc := range []struct {
		name, meta, want string
	}{
		{"electd with a proxy", `{"id":"web-1","advertise":"a","proxy":"10.0.0.1:4041"}`, "10.0.0.1:4041"},
		{"older electd", `{"id":"web-1","advertise":"a"}`, ""},
		{"no meta node (Curator)", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{})
			if tc.meta != "" {
				u.f.put("/e.advertise/"+sessionHex(0x2000), tc.meta, 0x2000, zk.FlagEphemeral)
			}
			u.other(0x2000, "web-1")
			u.settle()
			st := u.wantLeader(false)
			if st.Leader == nil || st.Leader.ID != "web-1" {
				t.Fatalf("leader %+v, want web-1", st.Leader)
			}
			if got := st.Leader.Proxy; got != tc.want {
				t.Fatalf("leader proxy = %q, want %q", got, tc.want)
			}
		})
	}
}
