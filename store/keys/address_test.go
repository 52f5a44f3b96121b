package keys

import (
	"reflect"
	"testing"
)

func TestCloseLabels(t *testing.T) {
	t.Parallel()
	labels := []string{"prod", "prod eu", "staging", "Stage-2", "dev"}
	for typed, want := range map[string][]string{
		"prdo":    {"prod"},            // a swap counts one
		"PROD":    {"prod"},            // differs only in case: that one alone
		"pro":     {"prod", "prod eu"}, // a prefix of both
		"prod-eu": {"prod eu"},
		"stagign": {"staging"},
		"stage-2": {"Stage-2"},
		"dve":     {"dev"},
		"zzz":     nil,
		"x":       nil,
	} {
		if got := CloseLabels(typed, labels); !reflect.DeepEqual(got, want) {
			t.Errorf("CloseLabels(%q) = %q, want %q", typed, got, want)
		}
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance = %d", d)
	}
}
