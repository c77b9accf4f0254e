package demo

import (
	"fmt"
	"io"
	"strings"
)

// printer writes the demo's story in the shape of a shell session: steps, indented
// details, commands a reader could type.
type printer struct {
	w                      io.Writer
	bold, green, red, none string
}

func newPrinter(w io.Writer, color bool) *printer {
	p := &printer{w: w}
	if color {
		p.bold, p.green, p.red, p.none = "\033[1m", "\033[32m", "\033[31m", "\033[0m"
	}
	return p
}

// step starts a part of the story.
func (p *printer) step(format string, args ...any) {
	fmt.Fprintf(p.w, "\n%s==> %s%s\n", p.bold, fmt.Sprintf(format, args...), p.none)
}

// ok states what a part showed.
func (p *printer) ok(format string, args ...any) {
	fmt.Fprintf(p.w, "%s==> %s%s\n", p.green, fmt.Sprintf(format, args...), p.none)
}

// info prints a detail, each line indented.
func (p *printer) info(text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(p.w, "    %s\n", line)
	}
}

// cmd shows a command the reader can run to see the same.
func (p *printer) cmd(format string, args ...any) {
	fmt.Fprintf(p.w, "    $ %s\n", fmt.Sprintf(format, args...))
}
