package reconciler

import (
	"testing"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

func TestDecideMode(t *testing.T) {
	const liqo, standalone = gitpeerv1alpha1.PeeringModeLiqo, gitpeerv1alpha1.PeeringModeStandalone
	for name, tc := range map[string]struct {
		recorded, current, accepted string
		want                        modeStep
	}{
		"standalone, still":                             {standalone, standalone, "", modeGoOn},
		"Liqo mode, still":                              {liqo, liqo, "", modeGoOn},
		"no record is standalone (earlier versions)":    {"", standalone, "", modeGoOn},
		"no record, now Liqo mode":                      {"", liqo, "", modeBlocked},
		"standalone, now Liqo mode":                     {standalone, liqo, "", modeBlocked},
		"Liqo mode, now standalone":                     {liqo, standalone, "", modeBlocked},
		"switch to Liqo mode accepted":                  {standalone, liqo, liqo, modeSwitch},
		"switch to standalone accepted":                 {liqo, standalone, standalone, modeSwitch},
		"acceptance of the other mode does not count":   {liqo, standalone, liqo, modeBlocked},
		"acceptance without a switch changes nothing":   {liqo, liqo, standalone, modeGoOn},
		"acceptance of an unknown value does not count": {standalone, liqo, "yes", modeBlocked},
		"no record, switch to Liqo mode accepted":       {"", liqo, liqo, modeSwitch},
	} {
		t.Run(name, func(t *testing.T) {
			if got := decideMode(tc.recorded, tc.current, tc.accepted); got != tc.want {
				t.Errorf("decideMode(%q, %q, %q) = %d, want %d", tc.recorded, tc.current, tc.accepted, got, tc.want)
			}
		})
	}
}
