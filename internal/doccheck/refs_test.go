// Package doccheck holds repository-wide checks on the project's own text.
package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// forbidden are references to files a user of the library does not have:
// the developers' private notes. Docs and comments cite papers and RFCs
// by title and section instead, and longer notes live in the repository.
var forbidden = []string{"SPEC §", "SPEC.md", "seeds/", "DESIGN.md", "STYLE.md", "../shared"}

// TestDocsStandAlone fails if a non-test Go file or a Markdown file of the
// module mentions one of them.
func TestDocsStandAlone(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		isGo := strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
		if !isGo && !strings.HasSuffix(name, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			for _, f := range forbidden {
				if strings.Contains(line, f) {
					t.Errorf("%s:%d mentions %q: cite the paper or RFC by title and section instead", path, i+1, f)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: is the walk rooted at the module?", checked)
	}
}
