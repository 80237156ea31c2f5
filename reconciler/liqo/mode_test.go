package liqo

import (
	"testing"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

func TestDecideMode(t *testing.T) {
	const liqo, standalone = gitpeerv1alpha1.PeeringModeLiqo, gitpeerv1alpha1.PeeringModeStandalone
	for name, tc := range map[string]struct {
		recorded, current, accepted string
		want                        ModeStep
	}{
		"standalone, still":                             {standalone, standalone, "", ModeGoOn},
		"Liqo mode, still":                              {liqo, liqo, "", ModeGoOn},
		"no record is standalone (earlier versions)":    {"", standalone, "", ModeGoOn},
		"no record, now Liqo mode":                      {"", liqo, "", ModeBlocked},
		"standalone, now Liqo mode":                     {standalone, liqo, "", ModeBlocked},
		"Liqo mode, now standalone":                     {liqo, standalone, "", ModeBlocked},
		"switch to Liqo mode accepted":                  {standalone, liqo, liqo, ModeSwitch},
		"switch to standalone accepted":                 {liqo, standalone, standalone, ModeSwitch},
		"acceptance of the other mode does not count":   {liqo, standalone, liqo, ModeBlocked},
		"acceptance without a switch changes nothing":   {liqo, liqo, standalone, ModeGoOn},
		"acceptance of an unknown value does not count": {standalone, liqo, "yes", ModeBlocked},
		"no record, switch to Liqo mode accepted":       {"", liqo, liqo, ModeSwitch},
	} {
		t.Run(name, func(t *testing.T) {
			if got := DecideMode(tc.recorded, tc.current, tc.accepted); got != tc.want {
				t.Errorf("DecideMode(%q, %q, %q) = %d, want %d", tc.recorded, tc.current, tc.accepted, got, tc.want)
			}
		})
	}
}
