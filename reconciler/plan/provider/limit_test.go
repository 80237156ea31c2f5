package provider

import (
	"slices"
	"testing"
)

func TestActs(t *testing.T) {
	for _, tc := range []struct {
		step                      Step
		nonceOnBranch, renewalDue bool
		want                      bool
	}{
		{Issue, true, false, true},
		{Issue, false, false, true},
		{Maintain, true, false, false},
		{Maintain, true, true, true},
		{OfferNonce, false, false, true},
		{OfferNonce, true, false, false},
		{Revoke, false, false, false},
		{FailClosed, true, true, false},
		{SkipInvalid, false, false, false},
	} {
		if got := Acts(tc.step, tc.nonceOnBranch, tc.renewalDue); got != tc.want {
			t.Errorf("Acts(%s, nonce on branch %t, renewal due %t) = %t, want %t", tc.step, tc.nonceOnBranch, tc.renewalDue, got, tc.want)
		}
	}
}

// TestRoundLimit plans a round's peerings in order: the first Max that act
// act, the others that act are held back, and those that do not act are
// never held back, before or after the limit is reached.
func TestRoundLimit(t *testing.T) {
	type peering struct {
		name string
		acts bool
	}
	round := []peering{{"a", true}, {"b", false}, {"c", true}, {"d", true}, {"e", false}, {"f", true}}
	for _, tc := range []struct {
		max        int
		want, held []string
	}{
		{max: 2, want: []string{"a", "b", "c", "e"}, held: []string{"d", "f"}},
		{max: 1, want: []string{"a", "b", "e"}, held: []string{"c", "d", "f"}},
		{max: 4, want: []string{"a", "b", "c", "d", "e", "f"}},
		{max: 0, want: []string{"a", "b", "c", "d", "e", "f"}},
	} {
		l := RoundLimit{Max: tc.max}
		var went, held []string
		for _, p := range round {
			if l.Take(p.acts) {
				went = append(went, p.name)
			} else {
				held = append(held, p.name)
			}
		}
		if !slices.Equal(went, tc.want) || !slices.Equal(held, tc.held) || l.Held != len(tc.held) {
			t.Errorf("Max %d: went %v, held %v (counted %d); want %v, %v", tc.max, went, held, l.Held, tc.want, tc.held)
		}
		if tc.max > 0 && l.Acting > tc.max {
			t.Errorf("Max %d: %d peerings acted", tc.max, l.Acting)
		}
	}
}

// TestRoundLimitFull: Full once Max peerings act, never without a limit;
// HoldBack counts a peering held back without planning it.
func TestRoundLimitFull(t *testing.T) {
	l := RoundLimit{Max: 2}
	for i, want := range []bool{false, false, true} {
		if got := l.Full(); got != want {
			t.Errorf("after %d acting: Full() = %t, want %t", i, got, want)
		}
		l.Take(true)
	}
	l.HoldBack()
	if l.Acting != 2 || l.Held != 2 {
		t.Errorf("Acting %d, Held %d; want 2, 2", l.Acting, l.Held)
	}
	none := RoundLimit{}
	none.Take(true)
	if none.Full() {
		t.Error("no limit: Full() = true")
	}
}
