package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

const (
	// progressDelay is how long a run goes before its bar appears: short
	// runs (most simulations) print nothing.
	progressDelay = 2 * time.Second
	// progressEvery limits redraws, so a chatty Progress callback costs
	// nothing.
	progressEvery = 100 * time.Millisecond
	// progressWidth is the bar's width in characters.
	progressWidth = 30
	// progressLineEvery is how often a long run prints a progress line
	// when stderr is not a terminal (a log file, CI): often enough to show
	// it is alive, rarely enough to keep the log short.
	progressLineEvery = 5 * time.Second
)

// progressBar draws "label [=====>    ]  42%" on one terminal line, from
// progressDelay after it was made until Done erases it. On a writer that is
// not a terminal it prints the same text as a plain line every
// progressLineEvery instead. A disabled bar does nothing.
type progressBar struct {
	w       io.Writer
	enabled bool
	lines   bool // not a terminal: plain lines, no redraws
	label   string
	now     func() time.Time // time.Now; a fake in tests
	start   time.Time
	last    time.Time // last redraw
	drawn   bool
}

func newProgressBar(w io.Writer, enabled bool, label string) *progressBar {
	p := &progressBar{w: w, enabled: enabled, lines: !isTerminal(w), label: label, now: time.Now}
	if enabled {
		p.start = p.now()
	}
	return p
}

// Set shows progress frac in [0,1].
func (p *progressBar) Set(frac float64) {
	if !p.enabled {
		return
	}
	t := p.now()
	every := progressEvery
	if p.lines {
		every = progressLineEvery
	}
	if t.Sub(p.start) < progressDelay || (p.drawn && t.Sub(p.last) < every) {
		return
	}
	p.last, p.drawn = t, true
	if p.lines {
		fmt.Fprintln(p.w, renderBar(p.label, frac, progressWidth))
		return
	}
	fmt.Fprint(p.w, "\r"+renderBar(p.label, frac, progressWidth)+"\x1b[K")
}

// Done erases the bar if it was drawn (plain lines stay).
func (p *progressBar) Done() {
	if p.drawn && !p.lines {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// renderBar is the text of a bar of width characters at frac.
func renderBar(label string, frac float64, width int) string {
	frac = min(max(frac, 0), 1)
	n := int(frac * float64(width))
	bar := strings.Repeat("=", n)
	if n < width {
		bar += ">" + strings.Repeat(" ", width-n-1)
	}
	return fmt.Sprintf("%s [%s] %3.0f%%", label, bar, frac*100)
}

// isTerminal reports whether w is a terminal (then progress bars are drawn).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
