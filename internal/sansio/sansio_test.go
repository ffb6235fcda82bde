// Package sansio holds a test that keeps the core sans-I/O: no file of cc,
// owd, acp, clock, the protocol session (internal/session, wire,
// recovery, pacer, seal) or the quic-go hook's state machines (coreFiles) may
// read the host clock, sleep, start a goroutine or import a networking
// package, except the few files listed in allowed, which are the
// documented edges (the system clock itself).
package sansio

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var corePackages = []string{"cc", "owd", "acp", "clock", "internal/session", "internal/wire", "internal/recovery", "internal/pacer", "internal/seal"}

// coreFiles are sans-I/O files in packages that also hold I/O: the quic-go
// hook's per-peer state machines and its wire codec (its socket, goroutine
// and timers live in the package's other files).
var coreFiles = []string{"transport/quichook/sender.go", "transport/quichook/receiver.go", "transport/quichook/wire.go"}

// allowed lists the files that may do I/O, and why.
var allowed = map[string]string{
	"clock/system.go": "the system clock reads the host clock by definition",
}

var forbiddenCalls = map[string]bool{
	"time.Now": true, "time.Since": true, "time.Until": true, "time.Sleep": true,
	"time.After": true, "time.Tick": true, "time.NewTimer": true, "time.NewTicker": true,
	"time.AfterFunc": true,
}

var forbiddenImports = map[string]bool{"net": true, "net/netip": false, "os/exec": true, "syscall": true}

func TestCoreIsSansIO(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	var extra []string
	for _, f := range coreFiles {
		extra = append(extra, filepath.Join(root, f))
	}
	for _, pkg := range append(corePackages, "") {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		require.NoError(t, err)
		if pkg == "" {
			files = extra
		}
		for _, path := range files {
			rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(os.PathSeparator)))
			if strings.HasSuffix(path, "_test.go") || allowed[rel] != "" {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			require.NoError(t, err)
			checked++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if forbiddenImports[p] {
					t.Errorf("%s imports %q", rel, p)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: goroutine started at %s", rel, fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok && forbiddenCalls[id.Name+"."+n.Sel.Name] {
						t.Errorf("%s: %s.%s at %s", rel, id.Name, n.Sel.Name, fset.Position(n.Pos()))
					}
				}
				return true
			})
		}
	}
	require.Greater(t, checked, 8, "the test must actually look at the core files")
}
