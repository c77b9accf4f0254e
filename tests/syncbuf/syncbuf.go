// Package syncbuf is kept for internal/proxy's tests until they import
// internal/testkit, whose Buffer this is.
package syncbuf

import "github.com/electd/electd/internal/testkit"

// Buffer is testkit.Buffer.
type Buffer = testkit.Buffer
