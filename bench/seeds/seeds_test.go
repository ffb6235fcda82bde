package seeds

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for list, want := range map[string][]int64{
		"1-20":       {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
		"1,3,7-9":    {1, 3, 7, 8, 9},
		" 5 , 0":     {5, 0},
		"4-4":        {4},
		"10-12,2,30": {10, 11, 12, 2, 30},
	} {
		got, err := Parse(list)
		require.NoError(t, err, list)
		require.Equal(t, want, got, list)
	}
	for list, want := range map[string]string{
		"":        "empty element",
		"1,,2":    "empty element",
		"1,":      "empty element",
		"x":       `"x" is not a seed`,
		"-3":      `"-3" is not a seed`,
		"1-x":     `"1-x" is not a range`,
		"1-2-3":   `"1-2-3" is not a range`,
		"5-3":     `range "5-3" runs backwards`,
		"1-3,2":   "seed 2 given twice",
		"0-20000": "more than 10000 seeds",
	} {
		_, err := Parse(list)
		require.Error(t, err, list)
		require.Contains(t, err.Error(), want, list)
	}
}

// Label is the shortest list Parse reads back as the same seeds.
func TestLabel(t *testing.T) {
	for _, tc := range []struct {
		seeds []int64
		want  string
	}{
		{nil, ""},
		{[]int64{7}, "7"},
		{Range(1, 10), "1-10"},
		{[]int64{1, 3, 7, 8, 9}, "1,3,7-9"},
		{[]int64{10, 11, 12, 2, 30}, "10-12,2,30"},
		{[]int64{4, 5}, "4-5"},
	} {
		require.Equal(t, tc.want, Label(tc.seeds))
		if tc.seeds != nil {
			back, err := Parse(tc.want)
			require.NoError(t, err)
			require.Equal(t, tc.seeds, back)
		}
	}
}

func TestRange(t *testing.T) {
	require.Equal(t, []int64{3, 4, 5}, Range(3, 5))
	require.Equal(t, []int64{3}, Range(3, 3))
	require.Empty(t, Range(5, 3))
}
