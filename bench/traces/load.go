package traces

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// cache holds every trace Load has read, by absolute path: a sweep of ten
// seeds × four controllers × two directions builds 80 links from the same
// two files, and each file is a megabyte to parse.
var cache struct {
	mu     sync.Mutex
	traces map[string]*Trace
}

// Load reads and parses the trace file at path, once per process: later
// calls with the same file (by absolute path) return the same *Trace.
// Failures are not cached (the file may be fixed and tried again).
func Load(path string) (*Trace, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if t, ok := cache.traces[abs]; ok {
		return t, nil
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	t, err := Parse(f, abs)
	if err != nil {
		return nil, err
	}
	if cache.traces == nil {
		cache.traces = map[string]*Trace{}
	}
	cache.traces[abs] = t
	return t, nil
}

// ErrNotFound is returned by Resolve when no candidate exists.
var ErrNotFound = errors.New("trace file not found")

// Resolve finds a trace file. An absolute name is used as it is; a
// relative one is tried in each directory of dirs in order (empty entries
// and repeats skipped), and the first that exists wins. The error names
// every place it looked.
func Resolve(name string, dirs ...string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty file name", ErrNotFound)
	}
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrNotFound, name, err)
		}
		return name, nil
	}
	var tried []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		tried = append(tried, p)
		st, err := os.Stat(p)
		if err == nil && !st.IsDir() {
			return p, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("trace %q: %w", name, err)
		}
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("%w: %q is relative and there is no directory to resolve it against", ErrNotFound, name)
	}
	return "", fmt.Errorf("%w: %q: looked for %s", ErrNotFound, name, strings.Join(tried, " and "))
}

// RepoRoot returns the nearest directory at or above dir that holds a
// ".git" entry (a directory in a clone, a file in a git worktree), or ""
// if there is none. Trace paths in scenario files are written from the
// repository root ("bench/traces/…"), which this finds without relying on
// go.mod (the bench tree may become a module of its own).
func RepoRoot(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}
