// Package docs checks the repository's Markdown. Its commands: every shell
// block of README.md and docs/*.md marked "run" runs, page by page after
// the README's setup, against real ZooKeeper, electd and scripts/app.py,
// and prints what the block shows but for ports, ids, times and tokens
// (tests/harness/doctest; -update writes what drifted); every shell block says who
// runs it (run, node, manual). Its links: every relative link in README.md,
// docs/ and the other *.md files names a file or directory that exists, and
// every #anchor names a heading of its target as GitHub writes the heading's
// id; external links (http, https, mailto) are not fetched. Its figures:
// every quoted region says what its kept report says (tests/harness/quote;
// -update writes them, as make quote does). There is no Go
// API here; see docs/development.md, "Commands in the docs".
package docs
