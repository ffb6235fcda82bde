package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readme is the repository's README, whose "Run the demo" section shows
// what the demo prints.
const readme = "../../README.md"

// TestReadmeSample runs the demo shortened to 1 s per phase and checks
// that its comparison table has the shape of README's sample: the same
// lines, the same headers and the same columns in the same order, each
// number printed the same way (its value may differ). Changing the
// table's format without README fails here.
func TestReadmeSample(t *testing.T) {
	b, err := os.ReadFile(readme)
	require.NoError(t, err)
	sample := readmeSample(t, string(b))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"-duration", "1s"}, &out))
	table := demoTable(t, out.String())

	require.Equal(t, shape(sample), shape(table),
		"the demo's table no longer has the shape of README's sample (update README's \"Run the demo\"):\nREADME:\n%s\ndemo:\n%s",
		strings.Join(sample, "\n"), strings.Join(table, "\n"))
}

// readmeSample returns the lines of the one unlabelled code block in
// README's "## Run the demo" section (the sh block runs the demo).
func readmeSample(t *testing.T, md string) []string {
	t.Helper()
	_, section, ok := strings.Cut(md, "\n## Run the demo\n")
	require.True(t, ok, "README has a \"## Run the demo\" section")
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	type block struct {
		lang  string // the info string after the opening fence
		lines []string
	}
	var blocks []block
	var cur *block
	for line := range strings.SplitSeq(section, "\n") {
		if fence, ok := strings.CutPrefix(line, "```"); ok {
			if cur == nil {
				cur = &block{lang: strings.TrimSpace(fence)}
			} else {
				blocks, cur = append(blocks, *cur), nil
			}
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, line)
		}
	}
	var samples [][]string
	for _, b := range blocks {
		if b.lang == "" {
			samples = append(samples, b.lines)
		}
	}
	require.Len(t, samples, 1, "one unlabelled code block, the demo's sample, in README's \"Run the demo\"")
	return samples[0]
}

// demoTable returns the lines of the demo's comparison table: from its
// "controller" header to the blank line after the rows.
func demoTable(t *testing.T, out string) []string {
	t.Helper()
	var table []string
	for line := range strings.SplitSeq(out, "\n") {
		switch {
		case table == nil && strings.HasPrefix(strings.TrimSpace(line), "controller"):
			table = []string{line}
		case table != nil && strings.TrimSpace(line) == "":
			return table
		case table != nil:
			table = append(table, line)
		}
	}
	require.NotNil(t, table, "the demo printed its table:\n%s", out)
	return table
}

var (
	// columnGap separates the table's columns: tabwriter pads with at
	// least two spaces, and a header ("age mean") has single ones.
	columnGap = regexp.MustCompile(`\s{2,}`)
	// number is a value standing alone, not the 95 of the header "age p95".
	number = regexp.MustCompile(`\b\d+(\.\d+)?\b`)
)

// shape is a table's lines as columns, each number replaced by its format:
// N for the integer part and one d per decimal (1.69 and 12.34 are both
// N.dd, 7/7 is N/N).
func shape(lines []string) [][]string {
	var s [][]string
	for _, l := range lines {
		var cols []string
		for _, c := range columnGap.Split(strings.TrimSpace(l), -1) {
			cols = append(cols, number.ReplaceAllStringFunc(c, func(n string) string {
				_, frac, ok := strings.Cut(n, ".")
				if !ok {
					return "N"
				}
				return "N." + strings.Repeat("d", len(frac))
			}))
		}
		s = append(s, cols)
	}
	return s
}
