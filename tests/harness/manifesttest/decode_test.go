package manifesttest

import (
	"bytes"
	"testing"
)

// TestSplitDocuments checks the splitter on the cases the manifests use.
func TestSplitDocuments(t *testing.T) {
	in := []byte("# header\n---\na: 1\n---\n# only a comment\n---   \nb: 2\n---\n")
	got := SplitDocuments(in)
	if len(got) != 2 || !bytes.Contains(got[0], []byte("a: 1")) || !bytes.Contains(got[1], []byte("b: 2")) {
		t.Errorf("SplitDocuments = %q, want the documents holding a: 1 and b: 2", got)
	}
}
