package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunDispatch(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{args: nil, code: exitUsage, errOut: "usage: freshbench <command>"},
		{args: []string{"-h"}, code: exitOK, out: "Commands:"},
		{args: []string{"help"}, code: exitOK, out: "sim "},
		{args: []string{"frob"}, code: exitUsage, errOut: `unknown command "frob"`},
		{args: []string{"sim", "-h"}, code: exitOK, out: "usage: freshbench sim"},
		{args: []string{"sim", "--help"}, code: exitOK, out: "--acp-sweep"},
		{args: []string{"sim"}, code: exitUsage, errOut: "no scenario file given"},
		{args: []string{"sim", "--bogus", "x.json"}, code: exitUsage, errOut: "-bogus"},
		{args: []string{"sim", "/nonexistent/x.json"}, code: exitUsage, errOut: "/nonexistent/x.json"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, tc.code, run(tc.args, &out, &errOut), "stderr: %s", errOut.String())
			require.Contains(t, out.String(), tc.out)
			require.Contains(t, errOut.String(), tc.errOut)
		})
	}
}
