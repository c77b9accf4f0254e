package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Answers from the leader's proxy (docs/design/proxy.md, "Forwarding": an answer
// is relayed whole or not at all). HTTP/2 writes an answer's headers and
// its body apart, so a leader stopped or killed between the two (or
// mid-body) would leave the client of a follower's proxy with headers and
// a broken-off body: an answer that is neither whole nor a clean 503. A
// follower's proxy therefore relays nothing of a small answer of known
// length until the leader's proxy has proved it is still there: the whole
// answer arrived, or, once a part of it has, that proxy answered a ping
// sent after it (what it wrote before the ping's answer has arrived, so
// an answer that is merely slow, being written as the application goes,
// is relayed as it arrives from then on). An answer broken off before
// either is an attempt whose answer nothing was relayed of: judge sends
// it again when it is safe to repeat, and otherwise answers 503 "may or
// may not have been processed". Longer answers, those of unknown length
// (streams, gRPC) and one that finds the buffers' budget full are relayed
// as they arrive.

// wholeAnswer bounds the answers received this way.
const wholeAnswer = 64 << 10

// holdAnswer is ModifyResponse's part for an answer from the leader's
// proxy: it returns once the answer may be relayed (res.Body then reads
// what arrived and what is still to come), or with the error that broke it
// off.
func (h *httpProxy) holdAnswer(a *attempt, res *http.Response) error {
	n := res.ContentLength
	cc := a.cc.Load()
	if n <= 0 || n > wholeAnswer || cc == nil || !h.buffers.tryAcquire(n) {
		return nil
	}
	ab := &answerBuffer{src: res.Body, buf: make([]byte, 0, n), first: make(chan struct{}), done: make(chan struct{}),
		free: sync.OnceFunc(func() { h.buffers.release(n) })}
	ab.wake = sync.NewCond(&ab.mu)
	go ab.fill(int(n))
	select {
	case <-ab.done:
	case <-ab.first:
		select {
		case <-ab.done:
		default:
			// Part of it is here: is the leader's proxy still there?
			if err := h.pool.ping(cc); err != nil {
				_ = ab.Close()
				return fmt.Errorf("the leader's proxy stopped mid-answer (no answer to a ping within %v): %w", h.p.cfg.PeerTimeout, err)
			}
		}
	}
	if err := ab.failed(); err != nil {
		_ = ab.Close()
		return fmt.Errorf("the leader's proxy broke off its answer: %w", err)
	}
	res.Body = ab
	return nil
}

// answerBuffer reads an answer's body, of n bytes, on a goroutine of its
// own, keeping it, and hands it on as it arrives; the end (and with it the
// trailers, which net/http's HTTP/2 transport fills in on the goroutine
// that reads the end) is read by the reader. Why not io.Pipe: a pipe
// blocks the writer until the reader takes the bytes, and nothing reads
// them until the answer may be relayed.
type answerBuffer struct {
	src   io.ReadCloser
	first chan struct{} // closed when the first read returned
	done  chan struct{} // closed when the n bytes are in, or src broke off (err)
	free  func()        // gives the budget back (once), when fill ended and Close was called

	mu     sync.Mutex
	wake   *sync.Cond
	buf    []byte
	off    int   // what Read handed on
	full   bool  // the n bytes are in
	err    error // what broke src off before them
	closed bool
}

func (ab *answerBuffer) fill(n int) {
	once := sync.OnceFunc(func() { close(ab.first) })
	for got := 0; ; {
		// Into buf's room past what Read may hand on: fill alone writes
		// there, and alone moves len(buf), under mu.
		k, err := ab.src.Read(ab.buf[got:n])
		once()
		got += k
		ab.mu.Lock()
		ab.buf = ab.buf[:got]
		ab.full = got == n
		if err == io.EOF && !ab.full {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			ab.err = err
		}
		stop := ab.full || ab.err != nil
		ab.mu.Unlock()
		ab.wake.Broadcast()
		if stop {
			break
		}
	}
	close(ab.done)
	ab.mu.Lock()
	closed := ab.closed
	ab.mu.Unlock()
	if closed {
		ab.free()
	}
}

// failed is what broke the answer off before its n bytes were in, if
// anything did.
func (ab *answerBuffer) failed() error {
	ab.mu.Lock()
	defer ab.mu.Unlock()
	return ab.err
}

func (ab *answerBuffer) Read(p []byte) (int, error) {
	ab.mu.Lock()
	for ab.off == len(ab.buf) && !ab.full && ab.err == nil && !ab.closed {
		ab.wake.Wait()
	}
	switch {
	case ab.off < len(ab.buf):
		k := copy(p, ab.buf[ab.off:])
		ab.off += k
		ab.mu.Unlock()
		return k, nil
	case ab.closed:
		ab.mu.Unlock()
		return 0, errors.New("proxy: read of a closed answer")
	case ab.err != nil:
		err := ab.err
		ab.mu.Unlock()
		return 0, err
	}
	ab.mu.Unlock()
	return ab.src.Read(p) // all n handed on, fill has ended: the end and the trailers
}

// Close ends the answer: src is closed (which ends fill) and the budget
// is given back once fill has ended.
func (ab *answerBuffer) Close() error {
	ab.mu.Lock()
	if ab.closed {
		ab.mu.Unlock()
		return nil
	}
	ab.closed = true
	ab.mu.Unlock()
	ab.wake.Broadcast()
	err := ab.src.Close()
	select {
	case <-ab.done:
		ab.free()
	default: // fill frees it as it ends
	}
	return err
}
