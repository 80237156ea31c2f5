package reconciler

import (
	"slices"
	"strings"
	"testing"

	authv1beta1 "github.com/gitpeer/gitpeer/apis/authentication/v1beta1"
	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// TestLoadScopeMatchesRelevantDirs checks that the reader lists exactly the
// directories the directory-scoped signature check ("Relevant") walks: those
// at, under or on the way to one of relevantDirs. A commit that changes what
// the reader reads is then always a commit the check verifies.
func TestLoadScopeMatchesRelevantDirs(t *testing.T) {
	dirs := []string{"me", "me/c1", "me/c1/sub", "p1", "p1/me", "p1/me/sub", "p1/other", "p1/other/me", "p3", "p3/me", "other", "other/me", "meme", "p1/meme"}
	for _, tc := range []struct {
		name               string
		provider, consumer bool
	}{{"provider", true, false}, {"consumer", false, true}, {"both", true, true}} {
		obj := &gitpeerv1alpha1.PeeringRepository{Spec: gitpeerv1alpha1.PeeringRepositorySpec{ClusterID: "me"}}
		if tc.provider {
			obj.Spec.Provider = &gitpeerv1alpha1.ProviderSpec{Enabled: true}
		}
		if tc.consumer {
			obj.Spec.Consumer = &gitpeerv1alpha1.ConsumerSpec{Providers: []authv1beta1.ClusterID{"p1", "p2"}}
		}
		relevant := relevantDirs(obj)
		for _, d := range dirs {
			walked := slices.ContainsFunc(relevant, func(r string) bool {
				return d == r || strings.HasPrefix(d, r+"/") || strings.HasPrefix(r, d+"/")
			})
			if read := loadScope(obj).Covers(d); read != walked {
				t.Errorf("%s: %s listed %v, walked by the signature check %v", tc.name, d, read, walked)
			}
		}
	}
}
