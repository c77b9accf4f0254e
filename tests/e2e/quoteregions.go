package e2e

import (
	"fmt"
	"slices"
	"strings"
)

// The regions the docs quote a kept report in (quote.go): what each says,
// computed from the report's lines.

// chooserNames are the README's names of the flavours, in its order.
var chooserNames = []struct{ flavour, name string }{
	{"readiness", "readiness gating (`deploy/k8s`)"},
	{"label", "leader label (`deploy/k8s-label`)"},
	{"proxy", "forwarding proxy (`deploy/k8s-proxy`)"},
	{"peer", "client-go's Lease elector, its defaults (15 s / 10 s / 2 s)"},
	{"peer-fast", "client-go's Lease elector, tuned (2 s / 1 s / 0.5 s, `ReleaseOnCancel`)"},
}

// Regions are every quoted region, file by file.
var Regions = slices.Concat(
	inFile("README.md", []QuoteRegion{
		{Name: "chooser", Render: renderChooser},
		{Name: "summary", Render: renderSummary},
		{Name: "lost", Render: renderLost},
	}),
	inFile("docs/kubernetes.md", []QuoteRegion{
		{Name: "sidecar", Render: renderSidecar},
		{Name: "election-to-answer", Render: renderElectionToAnswer},
		{Name: "readiness-rollout", Render: renderReadinessRollout},
		{Name: "lost-node", Render: renderLostNode},
	}),
	inFile("BENCHMARKS.md", []QuoteRegion{
		{Name: "run", Render: renderRun},
		{Name: "table", Render: renderTable},
		{Name: "sigterm", Render: renderSigterm},
		{Name: "zookeeper", Render: renderZooKeeper},
		{Name: "disruptions", Render: renderDisruptions},
	}),
)

// inFile sets the file of regions.
func inFile(file string, regions []QuoteRegion) []QuoteRegion {
	for i := range regions {
		regions[i].File = file
	}
	return regions
}

// cells returns a flavour's medians or maxima of some columns, or the
// first error.
func cells(r *KeptReport, flavour string, max bool, cols ...int) ([]string, error) {
	var out []string
	for _, c := range cols {
		v, err := r.cell(flavour, c, max)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func renderChooser(r *KeptReport) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "What deleting the leader pod cost on the test node (`make e2e`, the run kept in\n[%s](%s): a GET through the Service every 20 ms, 10\n", r.Path, r.Path)
	b.WriteString("deletions of a leader at rest; median / maximum from the DELETE, copied from its table), beside\nclient-go's Lease elector in the readiness flavour's place, with its defaults and tuned for speed:\n\n")
	b.WriteString("| flavour | first answer from the new leader through the Service | failed requests per deletion |\n|---|---|---|\n")
	for _, c := range chooserNames {
		row, ok := r.rows[c.flavour]
		if !ok {
			return "", fmt.Errorf("%s: no %s row", r.Path, c.flavour)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.name, row[colAnswer], row[colFailed])
	}
	def, err := cells(r, "peer", false, colAnswer, colFailed)
	if err != nil {
		return "", err
	}
	fast, err := cells(r, "peer-fast", false, colAnswer, colFailed)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range chooserNames[:3] {
		own, err := cells(r, c.flavour, false, colAnswer, colFailed)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s answered from the new leader after %s at the median with %s failed requests: %s than client-go with its defaults (%s, %s failed), and %s than client-go tuned (%s, %s failed)",
			strings.SplitN(c.name, " (", 2)[0], own[0], own[1], sooner(own[0], def[0]), def[0], def[1], sooner(own[0], fast[0]), fast[0], fast[1]))
	}
	b.WriteString("\nMedians: " + strings.Join(parts, "; ") + ". Tuned client-go renews its Lease every 0.5 s per candidate against the API server and steps down after 1 s without it; electd costs the API server nothing (the label flavour: one call per leader change).\n")
	return b.String(), nil
}

// sooner compares two medians "1.27 s".
func sooner(a, b string) string {
	switch x, y := seconds(a), seconds(b); {
	case x < y:
		return "sooner"
	case x > y:
		return "later"
	}
	return "as soon"
}

func renderSummary(r *KeptReport) (string, error) {
	var v []string
	for _, f := range []string{"proxy", "readiness", "label"} {
		c, err := cells(r, f, false, colFailed, colAnswer)
		if err != nil {
			return "", err
		}
		v = append(v, c...)
	}
	def, err := r.cell("peer", colAnswer, false)
	if err != nil {
		return "", err
	}
	fast, err := r.cell("peer-fast", colAnswer, false)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("On a real single-node Kubernetes, deleting the leader pod 10 times with a GET through the\nService every 20 ms: the proxy flavour failed %s and answered from the new leader after %s\n(median), readiness gating and the leader label failed %s and %s per deletion and answered after\n%s and %s, client-go's Lease elector after %s with its defaults and %s tuned\n([BENCHMARKS.md](BENCHMARKS.md#kubernetes-failover-on-a-real-node), the run in [%s](%s)).",
		v[0], v[1], v[2], v[4], v[3], v[5], def, fast, r.Path, r.Path), nil
}

func renderSidecar(r *KeptReport) (string, error) {
	med, err := r.cell("readiness", colAnswer, false)
	if err != nil {
		return "", err
	}
	mx, _ := r.cell("readiness", colAnswer, true)
	side, err := r.span("readiness", func(_, _, exit, side float64) float64 { return side - exit })
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("The kubelet sends electd SIGTERM only once it has noticed the app's exit (%s later on the\ntest node), and meanwhile the pod is terminating and nothing serves: from `kubectl delete pod` of\nthe leader to the first request answered through the Service by the new leader took %s at the\nmedian and %s at most ([BENCHMARKS.md](../BENCHMARKS.md#kubernetes-failover-on-a-real-node), the\nrun in [%s](%s)).",
		side, med, mx, strings.TrimPrefix(r.Path, "docs/"), strings.TrimPrefix(r.Path, "docs/")), nil
}

// renderElectionToAnswer states the two medians apart: the report keeps
// no per-delete gap, and a difference of medians is not a median.
func renderElectionToAnswer(r *KeptReport) (string, error) {
	c, err := cells(r, "readiness", false, colElected, colAnswer)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("After a handoff the EndpointSlice follows within about one probe period (1 s), and kube-proxy routes\nto the new leader at its next rule sync (at most once a second). In the run in [%s](%s), from the\nDELETE: the new leader was elected after %s and the first request was answered after %s (each\nthe median of its own column; the report keeps no per-delete gap between them).",
		strings.TrimPrefix(r.Path, "docs/"), strings.TrimPrefix(r.Path, "docs/"), c[0], c[1]), nil
}

func renderReadinessRollout(r *KeptReport) (string, error) {
	l := r.linesStarting("readiness", "`kubectl rollout restart`")
	if len(l) != 1 {
		return "", fmt.Errorf("%s: %d readiness rollout lines", r.Path, len(l))
	}
	none, err := measure(l[0], "longest time with no leader in the election")
	if err != nil {
		return "", err
	}
	ep, err := measure(l[0], "longest time with no ready endpoint")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("But the controller stops every old pod in the same step as it creates the new ones, before their\nelectd have joined: expect a few seconds with no participant at all (%s in the run in\n[%s](%s)), and no endpoint until the new leader's pod also passes the app's own\nreadiness probe (%s there, with the example app's 5 s probe period). The proxy flavour keeps an\nordinary rolling update and avoids both.",
		none, strings.TrimPrefix(r.Path, "docs/"), strings.TrimPrefix(r.Path, "docs/"), ep), nil
}

func renderRun(r *KeptReport) (string, error) {
	s := fmt.Sprintf("The run quoted here is [%s](%s), kept as `make e2e E2EFLAGS=-e2e.deletes=10`\nwrote it; every figure in this section is copied from it or computed from its lines\n(`go test ./tests/docs -run TestDocsQuoteTheKeptReports -update -e2e.quote=%s` writes them). Its first line:\n\n> %s\n\n", r.Path, r.Path, r.Path, r.First)
	if r.LowerMedian {
		s += "Its medians of an even count of deletes are the lower of the two middle values (the report predates the mean of the two). "
	}
	if r.Failed {
		return s + "That run reported a failure (its report's first line says so): see \"What the run did not pass\" below.", nil
	}
	return s + "That run passed: every check of every flavour held.", nil
}

func renderTable(r *KeptReport) (string, error) {
	var b strings.Builder
	b.WriteString("| flavour | deletes | new leader elected | EndpointSlice lists it | first answer from it through the ClusterIP | longest time with no ready endpoint | failed requests (every 20 ms) | max endpoints |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range Flavours {
		if row, ok := r.rows[f.Name]; ok {
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
	}
	return b.String(), nil
}

func renderSigterm(r *KeptReport) (string, error) {
	var stops, sides []string
	for _, f := range Flavours {
		stop, err := r.span(f.Name, func(stop, _, _, _ float64) float64 { return stop })
		if err != nil {
			return "", err
		}
		sig, _ := r.span(f.Name, func(_, sig, _, _ float64) float64 { return sig })
		side, _ := r.span(f.Name, func(_, _, exit, side float64) float64 { return side - exit })
		stops = append(stops, fmt.Sprintf("%s %s to the kubelet stopping the app, its SIGTERM at %s", f.Name, stop, sig))
		sides = append(sides, f.Name+" "+side)
	}
	return fmt.Sprintf("Each delete's line in the report says, from the kubelet's log, when it saw the deletion and began\nto stop the app; in the quoted run: %s. What remains between the DELETE and the hand-over in the\nreadiness and label flavours is the kubelet noticing the app's exit before it signals the sidecar:\nthe sidecar's SIGTERM came %s after the app exited; on a loaded node that step varies most.",
		strings.Join(stops, "; "), strings.Join(sides, ", ")), nil
}

// quoteLines renders report lines as a Markdown quote, one paragraph each.
func quoteLines(lines []string) string {
	return "> " + strings.Join(lines, "\n>\n> ")
}

func renderZooKeeper(r *KeptReport) (string, error) {
	var parts []string
	for _, f := range Flavours {
		if !f.ZooKeeperScenarios {
			continue
		}
		lines := append(r.linesStarting(f.Name, "ZooKeeper: "), r.linesStarting(f.Name, "ZooKeeper away")...)
		if len(lines) == 0 {
			return "", fmt.Errorf("%s: no ZooKeeper lines for %s", r.Path, f.Name)
		}
		parts = append(parts, f.Name+":\n\n"+quoteLines(lines))
	}
	return strings.Join(parts, "\n\n"), nil
}

func renderDisruptions(r *KeptReport) (string, error) {
	var parts []string
	for _, f := range Flavours {
		if f.Peer {
			continue
		}
		var lines []string
		for _, p := range []string{"SIGKILL of the leader's", "Cut off for", "`kubectl rollout restart`", "Credential rotated"} {
			lines = append(lines, r.linesStarting(f.Name, p)...)
		}
		drain := r.linesStarting(f.Name, "`kubectl drain`")
		if len(lines) == 0 || len(drain) != 1 {
			return "", fmt.Errorf("%s: the disruptions of %s are missing", r.Path, f.Name)
		}
		q := quoteLines(append(lines, drain[0]))
		for _, l := range r.block(f.Name, "`kubectl drain`") {
			q += "\n> " + l
		}
		parts = append(parts, f.Name+":\n\n"+q)
	}
	return strings.Join(parts, "\n\n"), nil
}

// The unannounced table's columns.
const (
	colChanges  = 2
	colNewAns   = 3
	colSilent   = 4
	colUFailed  = 5
	colUnreach  = 6
	colOut      = 7
	unannCols   = 8
	electdNames = 3 // chooserNames' electd flavours come first
)

// unannounced returns a flavour's row for one disruption.
func (r *KeptReport) unannouncedRow(flavour, what string) ([]string, error) {
	row, ok := r.unannounced[flavour+"/"+what]
	if !ok || len(row) != unannCols {
		return nil, fmt.Errorf("%s: no %q row for %s in the crash and lost-node table", r.Path, what, flavour)
	}
	return row, nil
}

// renderLost is the README's chooser's second table: per electd flavour,
// what a crash, a lost pod and a credential rotation cost beside a
// graceful delete.
func renderLost(r *KeptReport) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "What the failures nobody announces cost in the same run ([%s](%s)), from the disruption to the\nflavour at rest again, beside the median deletion:\n\n", r.Path, r.Path)
	b.WriteString("| flavour | deletion: first answer, failed | leader's electd SIGKILLed: leader changes, longest silence, failed (never reached an electd) | leader's pod cut off 30 s: out of the Service, first answer from the new leader, failed (never reached an electd) | credential rotated by a rolling restart: leader changes, failed |\n|---|---|---|---|---|\n")
	for _, c := range chooserNames[:electdNames] {
		del, err := cells(r, c.flavour, false, colAnswer, colFailed)
		if err != nil {
			return "", err
		}
		crash, err := r.unannouncedRow(c.flavour, crashName)
		if err != nil {
			return "", err
		}
		cut, err := r.unannouncedRow(c.flavour, cutOffName)
		if err != nil {
			return "", err
		}
		rot, err := r.unannouncedRow(c.flavour, rotationName)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| %s | %s, %s | %s, %s, %s (%s) | %s, %s, %s (%s) | %s, %s |\n", c.name, del[0], del[1],
			crash[colChanges], crash[colSilent], crash[colUFailed], crash[colUnreach], cut[colOut], cut[colNewAns], cut[colUFailed], cut[colUnreach], rot[colChanges], rot[colUFailed])
	}
	peers := 0
	for _, c := range chooserNames[electdNames:] {
		crash, err1 := r.unannouncedRow(c.flavour, crashName)
		cut, err2 := r.unannouncedRow(c.flavour, cutOffName)
		if err1 != nil || err2 != nil {
			continue // a report from before client-go was put through these
		}
		del, err := cells(r, c.flavour, false, colAnswer, colFailed)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| %s | %s, %s | %s, %s, %s (%s) | %s, %s, %s (%s) | no ZooKeeper credential |\n", c.name, del[0], del[1],
			crash[colChanges], crash[colSilent], crash[colUFailed], crash[colUnreach], cut[colOut], cut[colNewAns], cut[colUFailed], cut[colUnreach])
		peers++
	}
	if peers == 0 {
		b.WriteString("\nclient-go's elector was not put through these here. With a stable identity a restarted candidate takes its own Lease back at once; a lost holder's Lease passes on only once its lease duration (15 s by default) has run out since its last renewal.")
	} else {
		b.WriteString("\nclient-go's rows: its elector, with the pod's name as identity, runs in the container named electd in the others. A restarted candidate takes its own Lease back; a lost holder's Lease passes on once its lease duration has run out since its last renewal.")
	}
	b.WriteString(" \"Never reached an electd\": connections kube-proxy sent to the crashed or cut-off pod's address before its readiness probe took it out ([docs/kubernetes.md](docs/kubernetes.md#a-crashed-sidecar-a-lost-node)).\n")
	return b.String(), nil
}

// renderLostNode is the measured half of docs/kubernetes.md, "A crashed sidecar, a lost node":
// the cut-off's figures per flavour.
func renderLostNode(r *KeptReport) (string, error) {
	var parts []string
	for _, c := range chooserNames[:electdNames] {
		cut, err := r.unannouncedRow(c.flavour, cutOffName)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s stopped routing to the lost pod after %s and answered from the new leader after %s, with %s failed requests (%s of them never reached an electd)",
			strings.SplitN(c.name, " (", 2)[0], cut[colOut], cut[colNewAns], cut[colUFailed], cut[colUnreach]))
	}
	return fmt.Sprintf("On the test node, with the leader's pod cut off from everything for 30 s (the run in [%s](%s); a\nrequest through the Service every 20 ms): %s.",
		strings.TrimPrefix(r.Path, "docs/"), strings.TrimPrefix(r.Path, "docs/"), strings.Join(parts, "; ")), nil
}
