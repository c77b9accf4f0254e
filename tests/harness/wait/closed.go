package wait

// Closed reports, without blocking, whether ch is closed. It is for
// channels that are only ever closed (a done signal): a value sent on ch
// is taken and reported as not closed.
func Closed[T any](ch <-chan T) bool {
	select {
	case _, ok := <-ch:
		return !ok
	default:
		return false
	}
}
