package metrics

import (
	"bufio"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electd/electd/internal/apphealth"
	"github.com/electd/electd/internal/election"
	"github.com/electd/electd/internal/election/electiontest"
)

// operationsDoc holds the metrics table an operator reads.
const operationsDoc = "../../docs/operations.md"

// constLabels are set once per process, not values an operator looks up.
var constLabels = map[string]bool{"election": true, "version": true, "commit": true, "goversion": true}

type nopProxySource struct{}

func (nopProxySource) Held() int       { return 0 }
func (nopProxySource) Open() int       { return 0 }
func (nopProxySource) PeerConns() int  { return 0 }
func (nopProxySource) Buffered() int64 { return 0 }

type nopAppSource struct{}

func (nopAppSource) AppHealthy() bool { return true }

// Issue 40: the metrics table in docs/operations.md names every value of
// every label electd exports. Each label's values are exported from the
// start (so that rate() works before the first event), which makes the
// registry the list of what the code can emit: a value added in code and
// not described in the table fails here.
func TestOperationsTableDescribesEveryLabelValue(t *testing.T) {
	reg := prometheus.NewRegistry()
	New(reg, path, BuildInfo{Version: "1", Commit: "c", GoVersion: "go"})
	CollectStatus(reg, path, electiontest.New(election.Status{}))
	NewProxy(reg, path, nopProxySource{})
	NewApp(reg, path)
	CollectApp(reg, path, nopAppSource{})
	NewAPI(reg, path)
	NewServer(reg, path)
	CollectServer(reg, path, func() int { return 0 }, func() uint64 { return 0 })
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	rows := metricRows(t)
	for _, mf := range mfs {
		row, ok := rows[mf.GetName()]
		if !ok {
			t.Errorf("%s: no row of %s's metrics table names it", mf.GetName(), operationsDoc)
			continue
		}
		values := map[string]map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if constLabels[l.GetName()] {
					continue
				}
				if values[l.GetName()] == nil {
					values[l.GetName()] = map[string]bool{}
				}
				values[l.GetName()][l.GetValue()] = true
			}
		}
		for label, vs := range values {
			if !strings.Contains(row, mf.GetName()+"{"+label) && !strings.Contains(row, "{"+label+"}") {
				t.Errorf("%s: its row does not name the label %q", mf.GetName(), label)
			}
			for _, v := range sorted(vs) {
				if !strings.Contains(row, "`"+v+"`") {
					t.Errorf("%s{%s}: the value `%s` is exported but its row does not describe it", mf.GetName(), label, v)
				}
			}
		}
	}
	if len(apphealth.Results) == 0 {
		t.Fatal("apphealth exports no results: the table check would pass on nothing")
	}
}

// metricRows maps each metric name to the text of the table row that
// names it in its first cell (a row may name several).
func metricRows(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := regexp.MustCompile("`(electd_[a-z_]+)")
	rows := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `electd_") {
			continue
		}
		first, _, _ := strings.Cut(line[1:], "|")
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			rows[m[1]] = line
			// A histogram's series carry its name with suffixes.
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				rows[m[1]+suffix] = line
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 20 {
		t.Fatalf("found only %d metric rows in %s: has the table moved?", len(rows), operationsDoc)
	}
	return rows
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
