package e2e

import (
	"testing"
	"time"
)

// The median of an even count is the mean of the two middle values.
func TestStatsOfMedian(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		ds   []time.Duration
		want Stats
	}{
		{nil, Stats{}},
		{[]time.Duration{2 * s}, Stats{2 * s, 2 * s}},
		{[]time.Duration{3 * s, 1 * s}, Stats{2 * s, 3 * s}},
		{[]time.Duration{4 * s, 1 * s, 9 * s}, Stats{4 * s, 9 * s}},
		{[]time.Duration{8 * s, 2 * s, 6 * s, 4 * s}, Stats{5 * s, 8 * s}},
	} {
		if got := StatsOf(tc.ds); got != tc.want {
			t.Errorf("StatsOf(%v) = %v, want %v", tc.ds, got, tc.want)
		}
	}
}
