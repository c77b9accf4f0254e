package alerts

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs four scenarios at once unless -parallel says otherwise:
// they wait on Prometheus' windows and `for`s rather than on the processor,
// and -parallel's default, the number of cores, would run two at a time and
// take twice as long; all seven at once start some twenty electd processes
// and three JVMs together, too much beside the rest of the suite.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "4"); err != nil {
			panic(err) // the testing package's own flag
		}
	}
	os.Exit(m.Run())
}
