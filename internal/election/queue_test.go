package election

import (
	"fmt"
	"reflect"
	"testing"
)

func TestSortQueueFollowsCuratorOrder(t *testing.T) {
	in := []string{
		"_c_2a6e0f6c-1111-4a4a-9b9b-000000000001-latch-0000000012",
		"_c_0a6e0f6c-1111-4a4a-9b9b-000000000002-latch-0000000003",
		"_c_ffffffff-1111-4a4a-9b9b-000000000003-latch-0000000007",
	}
	got := sortQueue(in, latchTag)
	want := []string{in[1], in[2], in[0]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sortQueue = %v, want %v", got, want)
	}
}

func TestSortKeyUsesLastTag(t *testing.T) {
	if got, want := sortKey("_c_x-latch-latch-0000000001", latchTag), "0000000001"; got != want {
		t.Fatalf("sortKey = %q, want %q", got, want)
	}
	if got, want := sortKey("plain", latchTag), "plain"; got != want {
		t.Fatalf("sortKey without tag = %q, want %q", got, want)
	}
}

func TestProtectedID(t *testing.T) {
	uuid := "0a6e0f6c-1111-4a4a-9b9b-000000000002"
	for name, want := range map[string]string{
		"_c_" + uuid + "-latch-0000000003":                     uuid,
		"_c_" + uuid + "-lock-0000000003":                      uuid,
		"_c_0a6e0f6c11114a4a9b9b000000000002-latch-0000000003": "",
		"leader": "",
	} {
		if got := protectedID(name); got != want {
			t.Errorf("protectedID(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestForeignNodes(t *testing.T) {
	kids := []string{"_c_u-latch-0000000001", "_c_u-lock-0000000002", "leader"}
	if got, want := foreignNodes(ModeLatch, kids), []string{"_c_u-lock-0000000002", "leader"}; !reflect.DeepEqual(got, want) {
		t.Errorf("latch: %v, want %v", got, want)
	}
	if got, want := foreignNodes(ModeSelector, kids), []string{"_c_u-latch-0000000001", "leader"}; !reflect.DeepEqual(got, want) {
		t.Errorf("selector: %v, want %v", got, want)
	}
	if got, want := foreignNodes(ModeRace, kids), []string{"_c_u-latch-0000000001", "_c_u-lock-0000000002"}; !reflect.DeepEqual(got, want) {
		t.Errorf("race: %v, want %v", got, want)
	}
}

// A re-check sorts the whole queue; with 10,000 participants each of them
// sorts 10,000 names as it joins.
func BenchmarkSortQueue10k(b *testing.B) {
	kids := make([]string, 10000)
	for i := range kids {
		kids[i] = nodePrefix(ModeLatch, newTestUUID(int64(i))) + fmt.Sprintf("%010d", (i*7919)%10000)
	}
	b.ReportAllocs()
	for b.Loop() {
		sortQueue(kids, latchTag)
	}
}
