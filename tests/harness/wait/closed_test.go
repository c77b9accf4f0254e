package wait

import "testing"

func TestClosed(t *testing.T) {
	ch := make(chan struct{})
	if Closed(ch) {
		t.Fatal("Closed reports an open channel closed")
	}
	close(ch)
	if !Closed(ch) {
		t.Fatal("Closed reports a closed channel open")
	}
}
