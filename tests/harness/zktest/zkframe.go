package zktest

import "encoding/binary"

// ZooKeeper opcodes that create a node.
const (
	opCreate          = 1
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
)

// maxFrame is larger than any real client frame (jute.maxbuffer is 1 MiB by default) and
// smaller than a four-letter word read as a length ("ruok" is 0x72756f6b), so that a
// connection that does not speak the framing is recognised and left alone.
const maxFrame = 64 << 20

func isCreate(op int32) bool {
	switch op {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
		return true
	}
	return false
}

// frameParser follows the client-to-server ZooKeeper framing of one connection without
// buffering frames: 4-byte big-endian length, then the body. The first frame is the
// ConnectRequest; every later frame's body starts with xid int32 and opcode int32.
type frameParser struct {
	connected bool // the ConnectRequest header has been read
	broken    bool // not ZooKeeper framing: stop parsing
	hdr       [12]byte
	hdrN      int
	inBody    bool
	remain    int  // body bytes left in the current frame
	dropThis  bool // cut the connection at the end of the current frame
	creating  bool // the current frame is a create: counted when whole
}

type feedResult struct {
	creates, requests int
	cutAt             int // offset just past a create to drop after, or -1
}

// feed parses b. takeDrop is asked once per create request whether to drop after it.
func (f *frameParser) feed(b []byte, takeDrop func() bool) feedResult {
	res := feedResult{cutAt: -1}
	i := 0
	for !f.broken {
		if f.inBody {
			n := min(f.remain, len(b)-i)
			i += n
			f.remain -= n
			if f.remain > 0 {
				return res // need more bytes
			}
			f.inBody = false
			if f.creating {
				// Counted once whole, so that the caller, counting what it
				// has forwarded, never counts a create the server lacks.
				res.creates++
				f.creating = false
			}
			if f.dropThis {
				f.dropThis = false
				f.broken = true // the connection is cut here: nothing more to parse
				res.cutAt = i
				return res
			}
			continue
		}
		if i == len(b) {
			return res
		}
		need := 12
		if !f.connected {
			need = 4
		}
		n := min(need-f.hdrN, len(b)-i)
		copy(f.hdr[f.hdrN:], b[i:i+n])
		f.hdrN += n
		i += n
		if f.hdrN < need {
			return res
		}
		f.hdrN = 0
		length := int(int32(binary.BigEndian.Uint32(f.hdr[:4])))
		if !f.connected {
			if length < 0 || length > maxFrame {
				f.broken = true
				return res
			}
			f.connected = true
			f.remain = length
		} else {
			if length < 8 || length > maxFrame {
				f.broken = true
				return res
			}
			res.requests++
			if op := int32(binary.BigEndian.Uint32(f.hdr[8:12])); isCreate(op) {
				f.creating = true
				f.dropThis = takeDrop()
			}
			f.remain = length - 8
		}
		f.inBody = true
	}
	return res
}

// electionRewriter rewrites the initial message of a ZooKeeper (3.5+) election connection:
// protocol version int64 (negative), sid int64, length int32, then the connecting server's
// own election address(es) as "host:port" text. A server that receives a connection from a
// smaller sid drops it and connects back to that advertised address, which would bypass the
// peer proxies; the rewrite makes it connect back through the proxy of the reverse pair.
type electionRewriter struct {
	addr string
	buf  []byte
}

// feed returns the bytes to forward now and whether the initial message has been handled
// (after which the rewriter is no longer needed).
func (r *electionRewriter) feed(b []byte) (out []byte, done bool) {
	r.buf = append(r.buf, b...)
	if len(r.buf) < 8 {
		return nil, false
	}
	if version := int64(binary.BigEndian.Uint64(r.buf[:8])); version >= 0 {
		return r.flush() // protocol 0: the first long is the sid, no address follows
	}
	if len(r.buf) < 20 {
		return nil, false
	}
	n := int(int32(binary.BigEndian.Uint32(r.buf[16:20])))
	if n <= 0 || n > 4096 {
		return r.flush() // not what we expect: pass it through untouched
	}
	if len(r.buf) < 20+n {
		return nil, false
	}
	out = make([]byte, 0, len(r.buf)-n+len(r.addr))
	out = append(out, r.buf[:16]...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(r.addr)))
	out = append(out, r.addr...)
	out = append(out, r.buf[20+n:]...)
	r.buf = nil
	return out, true
}

func (r *electionRewriter) flush() ([]byte, bool) {
	out := r.buf
	r.buf = nil
	return out, true
}
