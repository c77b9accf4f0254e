// Package docs checks the repository's Markdown: every relative link in
// README.md, docs/ and the other *.md files names a file or directory that
// exists, and every #anchor names a heading of its target as GitHub writes
// the heading's id. External links (http, https, mailto) are not fetched.
// There is no Go API here; see docs/development.md.
package docs
