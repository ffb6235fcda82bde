package dscp

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDSCPNames(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  Codepoint
		code  uint8
	}{
		{[]string{"BE", "DF", "CS0", "be", "df", " cs0 ", "0"}, BestEffort, 0},
		{[]string{"LE", "le", "1"}, LE, 1},
		{[]string{"CS1", "cs1", "8"}, CS1, 8},
		{[]string{"AF11", "af11", "10"}, AF11, 10},
		{[]string{"AF12", "Af12", "12"}, AF12, 12},
		{[]string{"AF13", "14"}, AF13, 14},
		{[]string{"CS2", "16"}, CS2, 16},
		{[]string{"AF21", "18"}, AF21, 18},
		{[]string{"AF22", "20"}, AF22, 20},
		{[]string{"AF23", "22"}, AF23, 22},
		{[]string{"CS3", "24"}, CS3, 24},
		{[]string{"AF31", "26"}, AF31, 26},
		{[]string{"AF32", "28"}, AF32, 28},
		{[]string{"AF33", "30"}, AF33, 30},
		{[]string{"CS4", "32"}, CS4, 32},
		{[]string{"AF41", "34"}, AF41, 34},
		{[]string{"AF42", "36"}, AF42, 36},
		{[]string{"AF43", "af43", "38"}, AF43, 38},
		{[]string{"CS5", "40"}, CS5, 40},
		{[]string{"VA", "va", "44"}, VA, 44},
		{[]string{"EF", "ef", "46"}, EF, 46},
		{[]string{"CS6", "48"}, CS6, 48},
		{[]string{"CS7", "cs7", "56"}, CS7, 56},
	} {
		for _, s := range tc.names {
			d, err := Parse(s)
			require.NoError(t, err, s)
			require.Equal(t, tc.want, d, s)
			require.Equal(t, tc.code, d.Code(), s)
			require.True(t, d.IsSet(), s)
		}
		// String gives the first name, which parses back to the same value.
		require.Equal(t, tc.names[0], tc.want.String())
	}
}

func TestParseDSCPNumbers(t *testing.T) {
	for code := range uint8(64) {
		d, err := Parse(fmt.Sprint(code))
		require.NoError(t, err, code)
		require.Equal(t, code, d.Code())
		byCode, err := FromCode(code)
		require.NoError(t, err)
		require.Equal(t, d, byCode)
		back, err := Parse(d.String()) // a name or the number
		require.NoError(t, err, d.String())
		require.Equal(t, d, back, "String of %d reads back", code)
	}
	require.Equal(t, "13", Codepoint(dscpSet|13).String(), "a code without a name prints as its number")
	_, err := FromCode(64)
	require.Error(t, err)
}

func TestParseDSCPRejects(t *testing.T) {
	for _, s := range []string{"", " ", "64", "-1", "256", "1e1", "0x2e", "CS8", "CS", "CS77", "AF14", "AF51", "AF01", "AF10",
		"AF1", "AF111", "EFF", "BEST", "CS7x", "cs-1", "４６"} {
		_, err := Parse(s)
		require.Error(t, err, "%q", s)
		require.ErrorContains(t, err, fmt.Sprintf("%q", s), "the error names the input")
	}
}

func TestDSCPZeroValueIsUnset(t *testing.T) {
	var d Codepoint
	require.False(t, d.IsSet())
	require.Equal(t, "unset", d.String())
	require.NotEqual(t, BestEffort, d, "unset is not best effort")
	require.NotEqual(t, CS7, d)
	require.Equal(t, "invalid DSCP value 46", Codepoint(46).String(), "a raw number is not code point 46")

}

func TestDSCPText(t *testing.T) {
	type doc struct {
		A Codepoint `json:"a"`
		B Codepoint `json:"b,omitempty"`
		C Codepoint `json:"c"`
	}
	var v doc
	require.NoError(t, json.Unmarshal([]byte(`{"a":"af12","c":""}`), &v))
	require.Equal(t, doc{A: AF12}, v)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, `{"a":"AF12","c":""}`, string(b))
	_, err = Codepoint(46).MarshalText()
	require.ErrorContains(t, err, "invalid DSCP value 46")
	err = json.Unmarshal([]byte(`{"a":"AF44"}`), &v)
	require.ErrorContains(t, err, `"AF44"`)

	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	d := CS7
	fs.Var(&d, "dscp", "")
	require.NoError(t, fs.Parse([]string{"-dscp", "ef"}))
	require.Equal(t, EF, d)
	require.Error(t, fs.Parse([]string{"-dscp", ""}), "an empty flag value is refused")
	require.ErrorContains(t, fs.Parse([]string{"-dscp", "CS9"}), "CS9")
}
