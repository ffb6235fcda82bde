package transport

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
		want  DSCP
		code  uint8
	}{
		{[]string{"BE", "DF", "CS0", "be", "df", " cs0 ", "0"}, DSCPBestEffort, 0},
		{[]string{"LE", "le", "1"}, DSCPLE, 1},
		{[]string{"CS1", "cs1", "8"}, DSCPCS1, 8},
		{[]string{"AF11", "af11", "10"}, DSCPAF11, 10},
		{[]string{"AF12", "Af12", "12"}, DSCPAF12, 12},
		{[]string{"AF13", "14"}, DSCPAF13, 14},
		{[]string{"CS2", "16"}, DSCPCS2, 16},
		{[]string{"AF21", "18"}, DSCPAF21, 18},
		{[]string{"AF22", "20"}, DSCPAF22, 20},
		{[]string{"AF23", "22"}, DSCPAF23, 22},
		{[]string{"CS3", "24"}, DSCPCS3, 24},
		{[]string{"AF31", "26"}, DSCPAF31, 26},
		{[]string{"AF32", "28"}, DSCPAF32, 28},
		{[]string{"AF33", "30"}, DSCPAF33, 30},
		{[]string{"CS4", "32"}, DSCPCS4, 32},
		{[]string{"AF41", "34"}, DSCPAF41, 34},
		{[]string{"AF42", "36"}, DSCPAF42, 36},
		{[]string{"AF43", "af43", "38"}, DSCPAF43, 38},
		{[]string{"CS5", "40"}, DSCPCS5, 40},
		{[]string{"VA", "va", "44"}, DSCPVA, 44},
		{[]string{"EF", "ef", "46"}, DSCPEF, 46},
		{[]string{"CS6", "48"}, DSCPCS6, 48},
		{[]string{"CS7", "cs7", "56"}, DSCPCS7, 56},
	} {
		for _, s := range tc.names {
			d, err := ParseDSCP(s)
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
		d, err := ParseDSCP(fmt.Sprint(code))
		require.NoError(t, err, code)
		require.Equal(t, code, d.Code())
		byCode, err := DSCPCode(code)
		require.NoError(t, err)
		require.Equal(t, d, byCode)
		back, err := ParseDSCP(d.String()) // a name or the number
		require.NoError(t, err, d.String())
		require.Equal(t, d, back, "String of %d reads back", code)
	}
	require.Equal(t, "13", DSCP(dscpSet|13).String(), "a code without a name prints as its number")
	_, err := DSCPCode(64)
	require.Error(t, err)
}

func TestParseDSCPRejects(t *testing.T) {
	for _, s := range []string{"", " ", "64", "-1", "256", "1e1", "0x2e", "CS8", "CS", "CS77", "AF14", "AF51", "AF01", "AF10",
		"AF1", "AF111", "EFF", "BEST", "CS7x", "cs-1", "４６"} {
		_, err := ParseDSCP(s)
		require.Error(t, err, "%q", s)
		require.ErrorContains(t, err, fmt.Sprintf("%q", s), "the error names the input")
	}
}

func TestDSCPZeroValueIsUnset(t *testing.T) {
	var d DSCP
	require.False(t, d.IsSet())
	require.Equal(t, "unset", d.String())
	require.NotEqual(t, DSCPBestEffort, d, "unset is not best effort")
	require.NotEqual(t, DSCPCS7, d)
	require.Equal(t, "invalid DSCP value 46", DSCP(46).String(), "a raw number is not code point 46")

	c, err := testConfig(Config{}).withDefaults()
	require.NoError(t, err)
	require.Equal(t, DSCPBestEffort, c.StreamDSCP, "stream default")
	require.Equal(t, DSCPCS7, c.UpdateDSCP, "update default")

	c, err = testConfig(Config{UpdateDSCP: DSCPBestEffort, StreamDSCP: DSCPAF12}).withDefaults()
	require.NoError(t, err)
	require.Equal(t, uint8(0), c.UpdateDSCP.Code(), "best effort set explicitly stays best effort")
	require.Equal(t, uint8(12), c.StreamDSCP.Code())
}

func TestDSCPText(t *testing.T) {
	type doc struct {
		A DSCP `json:"a"`
		B DSCP `json:"b,omitempty"`
		C DSCP `json:"c"`
	}
	var v doc
	require.NoError(t, json.Unmarshal([]byte(`{"a":"af12","c":""}`), &v))
	require.Equal(t, doc{A: DSCPAF12}, v)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, `{"a":"AF12","c":""}`, string(b))
	_, err = DSCP(46).MarshalText()
	require.ErrorContains(t, err, "invalid DSCP value 46")
	err = json.Unmarshal([]byte(`{"a":"AF44"}`), &v)
	require.ErrorContains(t, err, `"AF44"`)

	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	d := DSCPCS7
	fs.Var(&d, "dscp", "")
	require.NoError(t, fs.Parse([]string{"-dscp", "ef"}))
	require.Equal(t, DSCPEF, d)
	require.Error(t, fs.Parse([]string{"-dscp", ""}), "an empty flag value is refused")
	require.ErrorContains(t, fs.Parse([]string{"-dscp", "CS9"}), "CS9")
}
