package zktest

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// frame builds a request frame: length, xid, opcode, body.
func frame(xid, op int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	return append(b, body...)
}

func connectFrame(n int) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(n)), bytes.Repeat([]byte{7}, n)...)
}

func TestFrameParser(t *testing.T) {
	stream := bytes.Join([][]byte{
		connectFrame(44),
		frame(-2, 11, nil),                                // ping
		frame(1, 4, []byte("/path\x00")),                  // getData
		frame(2, opCreate2, bytes.Repeat([]byte{1}, 100)), // the create to drop after
		frame(3, opCreate, []byte("/after")),
	}, nil)
	cutWant := len(connectFrame(44)) + len(frame(-2, 11, nil)) + len(frame(1, 4, []byte("/path\x00"))) +
		len(frame(2, opCreate2, bytes.Repeat([]byte{1}, 100)))

	// Every way of splitting the stream in two chunks gives the same answer.
	for split := 0; split <= len(stream); split++ {
		var f frameParser
		armed := true
		take := func() bool { d := armed; armed = false; return d }
		var creates, requests, cut int
		cut = -1
		for i, chunk := range [][]byte{stream[:split], stream[split:]} {
			res := f.feed(chunk, take)
			creates += res.creates
			requests += res.requests
			if res.cutAt >= 0 {
				if cut >= 0 {
					t.Fatalf("split %d: two cuts", split)
				}
				cut = res.cutAt
				if i == 1 {
					cut += split
				}
			}
		}
		if creates != 1 || requests != 3 || cut != cutWant {
			t.Fatalf("split %d: creates=%d requests=%d cut=%d; want 1, 3, %d", split, creates, requests, cut, cutWant)
		}
	}

	// Not disarmed: creates are counted and nothing is cut.
	var f frameParser
	res := f.feed(stream, func() bool { return false })
	if res.creates != 2 || res.requests != 4 || res.cutAt != -1 {
		t.Fatalf("unarmed: %+v", res)
	}

	// A four-letter word is not ZooKeeper framing: ignored.
	f = frameParser{}
	if res := f.feed([]byte("ruok"), func() bool { return true }); res.requests != 0 || res.cutAt != -1 || !f.broken {
		t.Fatalf("ruok: %+v broken=%v", res, f.broken)
	}
}

func TestElectionRewriter(t *testing.T) {
	msg := binary.BigEndian.AppendUint64(nil, uint64(0xffffffffffff0000)) // protocol version -65536
	msg = binary.BigEndian.AppendUint64(msg, 2)                           // sid
	addr := "127.0.0.1:3888"
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(addr)))
	msg = append(msg, addr...)
	msg = append(msg, "next"...) // whatever follows is passed on

	want := binary.BigEndian.AppendUint64(nil, uint64(0xffffffffffff0000))
	want = binary.BigEndian.AppendUint64(want, 2)
	proxy := "127.0.0.1:40001"
	want = binary.BigEndian.AppendUint32(want, uint32(len(proxy)))
	want = append(want, proxy...)
	want = append(want, "next"...)

	for split := 0; split <= len(msg); split++ {
		r := electionRewriter{addr: proxy}
		var got []byte
		out, done := r.feed(msg[:split])
		got = append(got, out...)
		if !done {
			out, done = r.feed(msg[split:])
			got = append(got, out...)
		} else {
			got = append(got, msg[split:]...)
		}
		if !done || !bytes.Equal(got, want) {
			t.Fatalf("split %d: done=%v got %q, want %q", split, done, got, want)
		}
	}

	// Protocol 0 (the first long is the sid): untouched.
	old := binary.BigEndian.AppendUint64(nil, 3)
	r := electionRewriter{addr: proxy}
	if out, done := r.feed(old); !done || !bytes.Equal(out, old) {
		t.Fatalf("old protocol: done=%v out=%x", done, out)
	}
}
