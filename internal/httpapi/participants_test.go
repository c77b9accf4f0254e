package httpapi

import (
	"errors"
	"testing"
	"time"

	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
)

func TestParticipants(t *testing.T) {
	leader, follower := *web1, *web2
	leader.IsLeader = true
	curator := election.Participant{ID: "java-1", Node: "_c_c-latch-0000000005", Session: 3, FencingToken: 7}
	tests := []struct {
		name  string
		parts []election.Participant
		err   error
		code  int
		body  string
	}{
		{name: "queue order", parts: []election.Participant{leader, follower, curator}, code: 200,
			body: `[{"id":"web-1","advertise":"10.0.0.7:8080","node":"_c_a-latch-0000000003","session":"0x1000a2b3c4d0001","fencing_token":4294967302,"is_leader":true},` +
				`{"id":"web-2","advertise":"10.0.0.8:8080","node":"_c_b-latch-0000000004","session":"0x1000a2b3c4d0002","fencing_token":4294967310,"is_leader":false},` +
				`{"id":"java-1","advertise":"","node":"_c_c-latch-0000000005","session":"0x3","fencing_token":7,"is_leader":false}]` + "\n"},
		{name: "race followers own no node", parts: []election.Participant{leader, {ID: "web-3", Advertise: "10.0.0.9:8080", Session: 5}}, code: 200,
			body: `[{"id":"web-1","advertise":"10.0.0.7:8080","node":"_c_a-latch-0000000003","session":"0x1000a2b3c4d0001","fencing_token":4294967302,"is_leader":true},` +
				`{"id":"web-3","advertise":"10.0.0.9:8080","node":null,"session":"0x5","fencing_token":null,"is_leader":false}]` + "\n"},
		{name: "a proxy's address", parts: []election.Participant{{ID: "web-4", Node: "_c_d-latch-0000000006", Session: 6, FencingToken: 8, IsLeader: true, Proxy: "10.0.0.10:4041"}}, code: 200,
			body: `[{"id":"web-4","advertise":"","node":"_c_d-latch-0000000006","session":"0x6","fencing_token":8,"is_leader":true,"proxy":"10.0.0.10:4041"}]` + "\n"},
		{name: "empty is an empty array", parts: nil, code: 200, body: "[]\n"},
		{name: "zookeeper error", err: errors.New("zk: connection closed"), code: 503,
			body: `{"error":"cannot read the participants from ZooKeeper: zk: connection closed"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := electiontest.New(followerSt)
			f.SetParticipants(tt.parts)
			f.Fail(electiontest.Participants, tt.err)
			reads := contexts(f, "participants")
			resp, body := doGet(t, newTestRouter(f, Options{}), "/participants")
			if got, want := resp.StatusCode, tt.code; got != want {
				t.Errorf("status = %d, want %d", got, want)
			}
			if got, want := body, tt.body; got != want {
				t.Errorf("body =\n%s\nwant\n%s", got, want)
			}
			if got, want := resp.Header.Get("Content-Type"), "application/json"; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			select {
			case ctx := <-reads:
				if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > participantsTimeout {
					t.Errorf("Participants ctx deadline = %v, %v; want within %v", dl, ok, participantsTimeout)
				}
			default:
				t.Error("Participants was not called")
			}
		})
	}
}
