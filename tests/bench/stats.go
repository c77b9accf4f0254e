package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Dist is a set of measured durations.
type Dist []time.Duration

// Quantile returns the q-quantile (0..1) by the nearest-rank method, or 0
// for no samples. The median is P50's.
func (d Dist) Quantile(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// P50 is the median: the middle value, or the mean of the two middle
// values of an even count (not the nearest rank, which takes the lower).
func (d Dist) P50() time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1] + (s[n/2]-s[n/2-1])/2
}

func (d Dist) P90() time.Duration { return d.Quantile(0.9) }
func (d Dist) P99() time.Duration { return d.Quantile(0.99) }
func (d Dist) Max() time.Duration { return d.Quantile(1) }

// String is "p50 x ms  p90 y ms  max z ms  (n=N)".
func (d Dist) String() string {
	if len(d) == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %s  p90 %s  max %s  (n=%d)", ms(d.P50()), ms(d.P90()), ms(d.Max()), len(d))
}

// ms prints a duration in milliseconds with two decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// ratio is a/b, or NaN when b is zero.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}
