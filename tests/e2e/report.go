package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Report gathers the figures of one run for BENCHMARKS.md: printed by the
// test and written as Markdown where -e2e.report says. The tests assert
// correctness only; these are measurements.
type Report struct {
	mu       sync.Mutex
	header   []string
	sections map[string][]string // flavour -> paragraphs
	after    []string            // after the flavours
	deletes  map[string][]Failover
	// unannounced: flavour -> its crash, cut-off and rotation figures.
	unannounced map[string][]Unannounced
}

// NewReport starts an empty report.
func NewReport() *Report {
	return &Report{sections: map[string][]string{}, deletes: map[string][]Failover{}, unannounced: map[string][]Unannounced{}}
}

// Header adds a paragraph before the flavours (versions, settings).
func (r *Report) Header(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.header = append(r.header, text)
}

// Add adds a paragraph to a flavour's section.
func (r *Report) Add(flavour, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sections[flavour] = append(r.sections[flavour], text)
}

// After adds a paragraph after the flavours' sections.
func (r *Report) After(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.after = append(r.after, text)
}

// Deletes records the delete-the-leader figures of a flavour.
func (r *Report) Deletes(flavour string, fs []Failover) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deletes[flavour] = append(r.deletes[flavour], fs...)
}

// DeleteTable is the side-by-side table of every flavour's deletes:
// medians and maxima.
func (r *Report) DeleteTable(flavours []Flavour) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString("| flavour | deletes | new leader elected | EndpointSlice lists it | first answer from it through the ClusterIP | longest time with no ready endpoint | failed requests (every 20 ms) | max endpoints |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, f := range flavours {
		fs := r.deletes[f.Name]
		if len(fs) == 0 {
			continue
		}
		var el, ep, svc, none []int64
		var failed []int
		maxEP := 0
		for _, x := range fs {
			el = append(el, int64(x.Elected))
			ep = append(ep, int64(x.Endpoint))
			svc = append(svc, int64(x.Service))
			none = append(none, int64(x.NoEndpoint))
			failed = append(failed, x.Failed)
			maxEP = max(maxEP, x.MaxEndpoints)
		}
		sort.Ints(failed)
		n := len(failed)
		med := float64(failed[(n-1)/2]+failed[n/2]) / 2 // the mean of the middle two of an even count
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %g / %d | %d |\n", f.Name, len(fs),
			statsOf(el), statsOf(ep), statsOf(svc), statsOf(none), med, failed[n-1], maxEP)
	}
	b.WriteString("\nEach cell: median (of an even count, the mean of the two middle values) / maximum, from the DELETE of the leader pod.\n")
	return b.String()
}

func statsOf(ns []int64) Stats {
	var ds []time.Duration
	for _, n := range ns {
		ds = append(ds, time.Duration(n))
	}
	return StatsOf(ds)
}

// Markdown renders the whole report.
func (r *Report) Markdown(flavours []Flavour) string {
	var b strings.Builder
	r.mu.Lock()
	for _, h := range r.header {
		b.WriteString(h + "\n\n")
	}
	r.mu.Unlock()
	b.WriteString(r.DeleteTable(flavours) + "\n")
	if t := r.UnannouncedTable(flavours); t != "" {
		b.WriteString(t + "\n")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range flavours {
		if len(r.sections[f.Name]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", f.Name, f.Describe)
		for _, s := range r.sections[f.Name] {
			b.WriteString(s + "\n\n")
		}
	}
	for _, s := range r.after {
		b.WriteString(s + "\n\n")
	}
	return b.String()
}
