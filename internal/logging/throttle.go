package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/electd/electd/internal/clock"
)

// RequestLogEvery is the least time between two request-level lines with
// the same message. Otherwise whoever reaches the port makes electd log at
// the rate it sends: one token-timing probe once caused 4,735 lines.
const RequestLogEvery = 10 * time.Second

// RequestLog is log for request-level lines (httpapi.Options.Logger): each
// message at most once every RequestLogEvery on clk.
func RequestLog(log *slog.Logger, clk clock.Clock) *slog.Logger {
	return slog.New(NewThrottle(log.Handler(), RequestLogEvery, clk, true))
}

// maxThrottleKeys bounds the messages tracked apart; past it they share one
// budget. electd's messages are constant strings, so this is a backstop.
const maxThrottleKeys = 64

// Throttle is a slog.Handler for request-level logs. The first record of a
// message passes, then at most one per interval. That one carries
// "suppressed": how many of that message were dropped since the last.
//
// golang.org/x/time/rate would decide "one per interval" but not count what
// was suppressed, and the count is the point. The decision is one
// comparison of two times, so it is done here.
type Throttle struct {
	slog.Handler
	s *throttleState // shared by the handlers WithAttrs and WithGroup derive
}

type throttleState struct {
	every time.Duration
	clock clock.Clock
	keyed bool // one budget per message; else one for all

	mu    sync.Mutex
	byMsg map[string]*msgBudget
}

type msgBudget struct {
	last       time.Time
	suppressed uint64
}

// NewThrottle throttles h: at most one record of a message per every on
// clk. keyed gives each message its own budget. The server's error log is
// not keyed: net/http puts the client's address in the message itself.
func NewThrottle(h slog.Handler, every time.Duration, clk clock.Clock, keyed bool) *Throttle {
	return &Throttle{Handler: h, s: &throttleState{every: every, clock: clk, keyed: keyed, byMsg: map[string]*msgBudget{}}}
}

func (t *Throttle) Handle(ctx context.Context, r slog.Record) error {
	n, ok := t.s.admit(r.Message)
	if !ok {
		return nil
	}
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Uint64("suppressed", n))
	}
	return t.Handler.Handle(ctx, r)
}

// admit says whether a record with msg may be logged now, and how many
// were suppressed before it.
func (s *throttleState) admit(msg string) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keyed {
		msg = ""
	}
	b := s.byMsg[msg]
	if b == nil {
		if len(s.byMsg) >= maxThrottleKeys {
			msg = ""
		}
		if b = s.byMsg[msg]; b == nil {
			b = &msgBudget{}
			s.byMsg[msg] = b
			b.last = s.clock.Now().Add(-s.every)
		}
	}
	now := s.clock.Now()
	if now.Sub(b.last) < s.every {
		b.suppressed++
		return 0, false
	}
	n := b.suppressed
	b.last, b.suppressed = now, 0
	return n, true
}

func (t *Throttle) WithAttrs(as []slog.Attr) slog.Handler {
	return &Throttle{Handler: t.Handler.WithAttrs(as), s: t.s}
}

func (t *Throttle) WithGroup(name string) slog.Handler {
	return &Throttle{Handler: t.Handler.WithGroup(name), s: t.s}
}
