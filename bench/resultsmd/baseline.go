package resultsmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The sections that put each number beside a committed "before" (the
// gaps, the untuned paths) read it from a baseline file in the plots
// directory: a JSON object whose "rows" are the section's rows, written by
// freshbench results --gaps-baseline or --untuned-baseline.

// keyed is a row of a section with a baseline: key names it in both.
type keyed interface{ key() string }

// beforeNow is a section's rows, the baseline's ("before") and this
// run's ("now"), by key.
type beforeNow[R keyed] struct {
	before, now map[string]R
}

// newBeforeNow is rows, this run's, beside the baseline file in dir.
func newBeforeNow[R keyed](rows []R, dir, file string) (*beforeNow[R], error) {
	before, err := readBaseline[R](dir, file)
	if err != nil {
		return nil, err
	}
	b := &beforeNow[R]{before: before, now: map[string]R{}}
	for _, r := range rows {
		b.now[r.key()] = r
	}
	return b, nil
}

// cell is f of the row key of m, "-" where there is none.
func (b *beforeNow[R]) cell(m map[string]R, key string, f func(R) string) string {
	if r, ok := m[key]; ok {
		return f(r)
	}
	return "-"
}

// pair is the cells of row key before and now: "before | now".
func (b *beforeNow[R]) pair(key string, f func(R) string) string {
	return b.cell(b.before, key, f) + " | " + b.cell(b.now, key, f)
}

// readBaseline reads the rows of the baseline file in dir, by their key;
// no file (or no dir) is no baseline: every "before" cell is "-".
func readBaseline[R keyed](dir, file string) (map[string]R, error) {
	out := map[string]R{}
	if dir == "" {
		return out, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var base struct {
		Rows []R `json:"rows"`
	}
	if err := json.Unmarshal(b, &base); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, r := range base.Rows {
		out[r.key()] = r
	}
	return out, nil
}

// sourceRevision names the controllers the baseline measured: the last
// commit that changed owd/ or cc/ in the scenarios' git tree (a rebase
// keeps that commit's hash, unlike the tip's), and whether they have
// uncommitted changes; "unknown revision" outside a git tree.
func sourceRevision(dir string) string {
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	rev, err := git("log", "-1", "--format=%h %s", "--", ":/owd", ":/cc")
	if err != nil || rev == "" {
		return "unknown revision"
	}
	src := "owd/ and cc/ as of commit " + rev
	if st, err := git("status", "--porcelain", "--", ":/owd", ":/cc"); err == nil && st != "" {
		src += ", with uncommitted changes"
	}
	return src
}
