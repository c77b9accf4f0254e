package zktest

import (
	"reflect"
	"testing"
	"time"
)

func TestParseCons(t *testing.T) {
	in := " /127.0.0.1:51234[1](queued=0,recved=7,sent=8,sid=0x1000a2b3c4d0001,lop=PING,est=1700000000000,to=4000,lcxid=0x5,lzxid=0x1a,lresp=1700000001234,llat=0,minlat=0,avglat=0,maxlat=3)\n" +
		" /127.0.0.1:51240[0](queued=0,recved=1,sent=0)\n"
	got := parseCons(in)
	want := []Conn{{Session: 0x1000a2b3c4d0001, Received: 7, Timeout: 4 * time.Second, LastResponse: 1700000001234 * time.Millisecond}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseCons = %+v, want %+v", got, want)
	}
}

func TestParseWchc(t *testing.T) {
	got := parseWchc("0x1000000000001\n\t/e/a\n\t/e\n0x1000000000002\n\t/e/b\n\n")
	want := map[int64][]string{0x1000000000001: {"/e/a", "/e"}, 0x1000000000002: {"/e/b"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseWchc = %v, want %v", got, want)
	}
}
