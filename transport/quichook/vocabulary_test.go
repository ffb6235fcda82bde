package quichook

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"testing"

	"github.com/stretchr/testify/require"
)

// hookOnly are the hook's settings package transport has no counterpart
// of: its per-peer queue, the spacing of its feedback, its two code
// points (quic-go's datagrams and the hook's own) and its peer table.
var hookOnly = map[string]bool{
	"QueuePackets": true, "QueueWait": true, "MinAckInterval": true,
	"DSCP": true, "AckDSCP": true, "MaxPeers": true,
}

// configFields returns the fields of the struct type Config declared in
// the Go file at path, each with its type as written.
func configFields(t *testing.T, path string) map[string]string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	fields := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Config" {
			return true
		}
		for _, fl := range ts.Type.(*ast.StructType).Fields.List {
			var typ bytes.Buffer
			require.NoError(t, printer.Fprint(&typ, fset, fl.Type))
			for _, name := range fl.Names {
				fields[name.Name] = typ.String()
			}
		}
		return false
	})
	require.NotEmpty(t, fields, "no Config in %s", path)
	return fields
}

// One vocabulary: a setting the hook shares with transport.Config has
// its name and type there (CC, AckEvery, MaxAckDelay, NoInband, …). Read
// from the source, so that this module need not import transport.
func TestConfigSpeaksTransportNames(t *testing.T) {
	ours, theirs := configFields(t, "config.go"), configFields(t, "../config.go")
	require.Contains(t, theirs, "StreamDSCP", "transport's Config read")
	for name, typ := range ours {
		if hookOnly[name] {
			continue
		}
		tt, ok := theirs[name]
		if !ok {
			t.Errorf("quichook.Config.%s has no transport.Config field of that name: rename it, or list it in hookOnly", name)
			continue
		}
		require.Equal(t, tt, typ, "quichook.Config.%s and transport.Config.%s differ in type", name, name)
	}
}
