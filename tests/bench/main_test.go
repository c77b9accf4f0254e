package bench

import (
	"os"
	"testing"

	"github.com/electd/electd/tests/harness/ledger"
)

func TestMain(m *testing.M) {
	ledger.MainIfApp() // a copy of this binary started as the fault section's application
	os.Exit(m.Run())
}
