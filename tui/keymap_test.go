package tui

import (
	"reflect"
	"testing"

	"charm.land/bubbles/v2/key"
)

// One meaning per key across screens: apart from movement (which moves
// whatever the screen has: a cursor, a field, the scroll) and the answers of
// a y/n question (asked while every other key is text), no key is bound
// twice in the key map. The footer and the help are built from it, so they
// cannot disagree with what a key does.
func TestEveryKeyHasOneMeaning(t *testing.T) {
	t.Parallel()
	contextual := map[string]bool{
		"Up": true, "Down": true, "ScrollUp": true, "ScrollDown": true, "NextField": true, "PrevField": true,
		"Enter": true, "Submit": true, "TabNext": true, "TabPrev": true, "Send": true, "Edit": true, "FilterKeep": true, "FilterClear": true, "Recall": true, "Yes": true, "No": true, "Quit": true, "ForceQuit": true, "Back": true,
	}
	km := reflect.ValueOf(DefaultKeyMap())
	owner := map[string]string{}
	for i := range km.NumField() {
		name := km.Type().Field(i).Name
		if contextual[name] {
			continue
		}
		b := km.Field(i).Interface().(key.Binding)
		for _, k := range b.Keys() {
			if k == "enter" { // Login's enter acts only once the session has ended
				continue
			}
			if other, ok := owner[k]; ok {
				t.Errorf("key %q means both %s and %s", k, other, name)
			}
			owner[k] = name
		}
	}
}
