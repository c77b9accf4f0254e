package proxy

import "sync/atomic"

// The framer (framing.go) and its parser: a state machine over the bytes of an
// HTTP/1 connection, RFC 9112's grammar for request heads and chunked
// bodies, strict where net/http is lenient.

// Bounds of what a framer accepts: a chunk line's extensions (net/http's
// own line limit), and a chunk size (net/http takes 16 hex digits).
const (
	maxChunkLine   = 4096
	maxChunkDigits = 16
	maxChunkSize   = 1 << 60
)

// Why a request is refused; the text goes into the 400 answer.
const (
	faultRequestLine = "a malformed request line"
	faultVersion     = "an HTTP version other than 1.0 and 1.1"
	faultField       = "a malformed header field"
	faultFold        = "a header line folded onto the next (obs-fold)"
	faultLineEnd     = "a bare CR or LF where CRLF ends a line"
	faultCLTE        = "both Content-Length and Transfer-Encoding"
	faultTE10        = "Transfer-Encoding on HTTP/1.0"
	faultTE          = "a Transfer-Encoding other than chunked"
	faultCL          = "an invalid Content-Length"
	faultCLs         = "Content-Length fields that differ"
	faultChunkLine   = "a malformed chunk size line"
	faultChunkSize   = "a chunk size over the limit"
	faultChunkEnd    = "chunk data not followed by CRLF"
	faultTrailer     = "a malformed trailer field"
	faultBody        = "the previous request's body could not be read whole"
	faultUpgrade     = "a request after an upgrade that did not happen"
)

// phase is where a framer is in the stream.
type phase uint8

const (
	phLine    phase = iota // a request line
	phField                // a field line of a head
	phSkip                 // the rest of a faulty head, for net/http to parse it
	phLength               // a body of declared length
	phSize                 // a chunk size
	phExt                  // a chunk's extensions
	phSizeLF               // the LF of a chunk line
	phData                 // a chunk's data
	phDataCR               // the CR after it
	phDataLF               // and its LF
	phTrailer              // a trailer field line
	phAside                // HTTP/2 with prior knowledge, or past an upgrade: not ours
	phCut                  // at fault: nothing more reaches net/http
)

// fieldKind is a header field that frames a request.
type fieldKind uint8

const (
	fieldOther fieldKind = iota
	fieldCL
	fieldTE
	fieldUpgrade
)

// head is what a framer knows of the head it parses.
type head struct {
	method   [4]byte
	mn, tn   int
	star     bool // the target is "*"
	ver      [8]byte
	vn       int
	http10   bool
	kind     fieldKind
	name     [len("transfer-encoding")]byte
	nn       int
	val      [24]byte
	vl       int
	nCL, nTE int
	cl       uint64
	clBad    bool
	clDiffer bool
	teBad    bool
	upgrade  bool
}

// framer is the strict parser of one HTTP/1 connection. Its reads are
// serialised by net/http (one read at a time, in the connection's order);
// what the handlers read (bad, poisoned, upgrade) is atomic, since a
// request's body may be read on another goroutine while they run.
type framer struct {
	on      bool
	maxHead int // what a faulty head may take before it is cut: net/http's own limit

	ph   phase
	st   uint8  // the step within a line
	cur  int64  // the request being parsed, from 0
	n    int    // bytes of the line or head, for the bounds
	left uint64 // what is left of a body or chunk
	lf   uint8  // phSkip: 1 after LF, 2 after LF CR
	h    head

	bad      atomic.Int64 // 1 + the first request at fault; 0: none
	why      string       // its fault, written before bad
	poisoned atomic.Bool  // a handler saw the framing break: nothing more is parsed
	upgrade  atomic.Int64 // 1 + the request that asked for an upgrade; 0: none
	open     atomic.Bool  // a streamed body not read to its end (framingBody)
	served   int64        // requests the handlers have seen (their goroutine only)
}

// scan parses b and returns how much of it may reach net/http: all of it,
// or what comes before a fault (for a faulty head, up to its end).
func (f *framer) scan(b []byte) int {
	for i := 0; i < len(b); {
		switch f.ph {
		case phAside:
			return len(b)
		case phCut:
			return i
		case phLength, phData:
			if k := uint64(len(b) - i); k < f.left {
				f.left -= k
				return len(b)
			}
			i += int(f.left)
			f.left = 0
			if f.ph == phData {
				f.ph = phDataCR
			} else {
				f.next()
			}
			continue
		case phField, phTrailer:
			// Most of a head is names and values nobody frames by: tight
			// loops over them.
			switch h := &f.h; {
			case f.st == 2 && h.kind == fieldOther:
				for i < len(b) && b[i] != '\r' && fieldByte(b[i]) {
					i++
				}
			case f.st == 1:
				for ; i < len(b) && tchar(b[i]); i++ {
					if h.nn < len(h.name) {
						h.name[h.nn] = lower(b[i])
					}
					h.nn++
				}
			}
			if i == len(b) {
				return i
			}
		case phLine:
			if f.st == 1 && f.h.tn > 0 {
				for i < len(b) && b[i] > ' ' && b[i] != 0x7f {
					f.h.star = false
					f.h.tn++
					i++
				}
				if i == len(b) {
					return i
				}
			}
		}
		if !f.step(b[i]) {
			return i
		}
		i++
	}
	return len(b)
}

// step parses one byte outside a body's data; false: it may not reach
// net/http.
func (f *framer) step(c byte) bool {
	switch f.ph {
	case phLine:
		return f.requestLine(c)
	case phField, phTrailer:
		return f.field(c)
	case phSkip:
		f.skip(c)
		return true
	case phSize:
		return f.chunkSize(c)
	case phExt:
		f.n++
		switch {
		case c == '\r':
			f.ph = phSizeLF
		case f.n > maxChunkLine || !fieldByte(c):
			return f.fail(faultChunkLine)
		}
		return true
	case phSizeLF:
		if c != '\n' {
			return f.fail(faultChunkLine)
		}
		f.ph, f.n = phData, 0
		if f.left == 0 {
			f.ph, f.st = phTrailer, 0
		}
		return true
	case phDataCR:
		if c != '\r' {
			return f.fail(faultChunkEnd)
		}
		f.ph = phDataLF
		return true
	case phDataLF:
		if c != '\n' {
			return f.fail(faultChunkEnd)
		}
		f.ph, f.n, f.left = phSize, 0, 0
		return true
	}
	return false
}

func (f *framer) requestLine(c byte) bool {
	h := &f.h
	switch f.st {
	case 0: // method
		switch {
		case tchar(c):
			if h.mn < len(h.method) {
				h.method[h.mn] = c
			}
			h.mn++
		case c == ' ' && h.mn > 0:
			f.st = 1
		default:
			return f.headFault(faultRequestLine, c)
		}
	case 1: // target
		switch {
		case c > ' ' && c != 0x7f:
			h.star = h.tn == 0 && c == '*'
			h.tn++
		case c == ' ' && h.tn > 0:
			f.st = 2
		default:
			return f.headFault(faultRequestLine, c)
		}
	case 2: // version
		switch {
		case c == '\r':
			f.st = 3
		case h.vn < len(h.ver) && c > ' ' && c != 0x7f:
			h.ver[h.vn] = c
			h.vn++
		default:
			return f.headFault(faultRequestLine, c)
		}
	case 3:
		if c != '\n' {
			return f.headFault(faultLineEnd, c)
		}
		switch v := string(h.ver[:h.vn]); {
		case v == "HTTP/1.1":
		case v == "HTTP/1.0":
			h.http10 = true
		case v == "HTTP/2.0" && f.cur == 0 && h.star && h.mn == 3 && string(h.method[:3]) == "PRI":
			f.ph = phAside // HTTP/2's preface: net/http serves HTTP/2 on it
			return true
		default:
			return f.headFault(faultVersion, c)
		}
		f.ph, f.st = phField, 0
	}
	return true
}

// field parses a field line of a head or of a chunked body's trailers.
func (f *framer) field(c byte) bool {
	h := &f.h
	fault := faultField
	if f.ph == phTrailer {
		fault = faultTrailer
	}
	switch f.st {
	case 0: // a line's start
		switch {
		case c == '\r':
			f.st = 4
		case c == ' ' || c == '\t':
			return f.lineFault(faultFold, c)
		case tchar(c):
			h.name[0], h.nn, h.vl, f.st = lower(c), 1, 0, 1
		case c == '\n':
			return f.lineFault(faultLineEnd, c)
		default:
			return f.lineFault(fault, c)
		}
	case 1: // name
		switch {
		case tchar(c):
			if h.nn < len(h.name) {
				h.name[h.nn] = lower(c)
			}
			h.nn++
		case c == ':':
			h.kind, f.st = fieldOther, 2
			if h.nn <= len(h.name) {
				h.kind = kindOf(string(h.name[:h.nn]))
			}
			if f.ph == phTrailer && (h.kind == fieldCL || h.kind == fieldTE) {
				return f.lineFault(fault, c)
			}
		default:
			return f.lineFault(fault, c)
		}
	case 2: // value
		switch {
		case c == '\r':
			f.st = 3
		case fieldByte(c):
			if h.kind == fieldCL || h.kind == fieldTE {
				if h.vl < len(h.val) {
					h.val[h.vl] = c
				}
				h.vl++
			}
		case c == '\n':
			return f.lineFault(faultLineEnd, c)
		default:
			return f.lineFault(fault, c)
		}
	case 3:
		if c != '\n' {
			return f.lineFault(faultLineEnd, c)
		}
		f.endField()
		f.st = 0
	case 4: // the empty line's LF
		if c != '\n' {
			return f.lineFault(faultLineEnd, c)
		}
		if f.ph == phTrailer {
			f.next()
			return true
		}
		f.endHead()
	}
	return true
}

func (f *framer) endField() {
	h := &f.h
	v := trimOWS(h.val[:min(h.vl, len(h.val))])
	switch h.kind {
	case fieldCL:
		h.nCL++
		n, ok := digits(v)
		if h.vl > len(h.val) || !ok {
			h.clBad = true
		}
		if h.nCL > 1 && n != h.cl {
			h.clDiffer = true
		}
		h.cl = n
	case fieldTE:
		h.nTE++
		if h.vl > len(h.val) || !equalFold(v, "chunked") {
			h.teBad = true
		}
	case fieldUpgrade:
		h.upgrade = true
	}
}

// endHead decides the request's framing at its head's end. A faulty head
// still reaches net/http whole, so that the handler answers it 400.
func (f *framer) endHead() {
	h := &f.h
	var fault string
	switch {
	case h.nTE > 0 && h.http10:
		fault = faultTE10
	case h.nTE > 0 && h.nCL > 0:
		fault = faultCLTE
	case h.nTE > 1 || h.teBad:
		fault = faultTE
	case h.clBad:
		fault = faultCL
	case h.clDiffer:
		fault = faultCLs
	}
	switch {
	case fault != "":
		f.fail(fault)
	case h.upgrade:
		// What follows may be another protocol's: the handler ends the
		// connection after the answer when the upgrade did not happen.
		f.upgrade.Store(f.cur + 1)
		f.ph = phAside
	case h.nTE > 0:
		f.ph, f.n, f.left = phSize, 0, 0
	case h.cl > 0:
		f.ph, f.left = phLength, h.cl
	default:
		f.next()
	}
}

func (f *framer) chunkSize(c byte) bool {
	f.n++
	switch {
	case hexVal(c) >= 0:
		if f.n > maxChunkDigits || f.left >= maxChunkSize>>4 {
			return f.fail(faultChunkSize)
		}
		f.left = f.left<<4 | uint64(hexVal(c))
	case c == ';' && f.n > 1:
		f.ph = phExt
	case c == '\r' && f.n > 1:
		f.ph = phSizeLF
	default:
		return f.fail(faultChunkLine)
	}
	return true
}

// next starts the next request's head.
func (f *framer) next() {
	f.ph, f.st, f.n, f.left, f.h = phLine, 0, 0, 0, head{}
	f.cur++
}

// fail records the fault of the current request and cuts the stream
// before the byte at fault.
func (f *framer) fail(why string) bool {
	if f.bad.Load() == 0 {
		f.why = why
		f.bad.Store(f.cur + 1)
	}
	f.ph = phCut
	return false
}

// headFault records a fault in a request line; the rest of the head
// still reaches net/http (phSkip).
func (f *framer) headFault(why string, c byte) bool {
	f.fail(why)
	f.ph, f.lf, f.n = phSkip, 0, 0
	f.skip(c)
	return true
}

// lineFault is headFault at a field line; in trailers the stream is cut.
func (f *framer) lineFault(why string, c byte) bool {
	if f.ph == phTrailer {
		return f.fail(why)
	}
	f.fail(why)
	f.ph, f.lf, f.n = phSkip, 0, 0
	switch f.st {
	case 0:
		f.lf = 1 // a line just ended
	case 4:
		f.lf = 2
	}
	f.skip(c)
	return true
}

// skip passes the rest of a faulty head on, up to where net/http ends a
// head (an empty line, CR optional) or its size limit; then it cuts.
func (f *framer) skip(c byte) {
	f.n++
	switch {
	case c == '\n' && f.lf > 0:
		f.ph = phCut
	case c == '\n':
		f.lf = 1
	case c == '\r' && f.lf == 1:
		f.lf = 2
	default:
		f.lf = 0
	}
	if f.n > f.maxHead {
		f.ph = phCut
	}
}

func kindOf(name string) fieldKind {
	switch name {
	case "content-length":
		return fieldCL
	case "transfer-encoding":
		return fieldTE
	case "upgrade":
		return fieldUpgrade
	}
	return fieldOther
}

// tchar reports a token character (RFC 9110, section 5.6.2).
func tchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// fieldByte reports a byte a field value may hold: visible, space, tab or
// obs-text; never CR, LF or another control.
func fieldByte(c byte) bool { return c == '\t' || (c >= ' ' && c != 0x7f) }

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// digits parses a Content-Length: decimal digits only, within int63.
func digits(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}
