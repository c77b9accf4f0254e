package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/electd/electd/internal/api"
	"github.com/electd/electd/internal/election"
)

// participantLister reads the queue, live, from ZooKeeper.
type participantLister interface {
	Participants(ctx context.Context) ([]election.Participant, error)
}

// participants serves GET /participants: a JSON array in queue order.
// It is the one read endpoint that asks ZooKeeper, bounded by
// participantsTimeout and, in number, by readers.
func participants(el participantLister, log *slog.Logger, readers capped) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		done, ok := readers.enter(w, r)
		if !ok {
			return
		}
		defer done()
		ctx, cancel := context.WithTimeout(r.Context(), participantsTimeout)
		defer cancel()
		ps, err := el.Participants(ctx)
		if err != nil {
			log.Warn("GET /participants failed", "err", err)
			writeError(w, http.StatusServiceUnavailable, "cannot read the participants from ZooKeeper: "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, participantsJSON(ps))
	}
}

// participantsJSON is the queue as GET /participants answers it.
func participantsJSON(ps []election.Participant) []api.Participant {
	out := make([]api.Participant, 0, len(ps))
	for _, p := range ps {
		j := api.Participant{
			ID:        p.ID,
			Advertise: p.Advertise,
			Session:   sessionHex(p.Session),
			IsLeader:  p.IsLeader,
			Proxy:     p.Proxy,
		}
		if p.Node != "" {
			node, tok := p.Node, p.FencingToken
			j.Node, j.FencingToken = &node, &tok
		}
		out = append(out, j)
	}
	return out
}
