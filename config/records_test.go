package config_test

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testRecordsOneWriter checks the gitpeer-records admission policy: the records Secrets (key pins
// and revocations) are written by the agent's ServiceAccount alone, not by a cluster admin
// (system:masters), another ServiceAccount holding every Secret right in the agent's namespace, nor
// a ServiceAccount named gitpeer-agent in another namespace; a namespace being deleted still goes,
// and removing the binding (the documented break glass) lets an admin write them.
func testRecordsOneWriter(ctx context.Context, t *testing.T, cfg *rest.Config, admin client.Client) {
	as := func(user string) client.Client {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: user}
		cl, err := client.New(c, client.Options{Scheme: clientgoscheme.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	agent := as(agentUser)
	ci := as("system:serviceaccount:" + systemNamespace + ":ci")
	otherAgent := as("system:serviceaccount:default:gitpeer-agent")
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "secrets-writer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "ci-secrets"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secrets-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: systemNamespace, Name: "ci"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "default-gitpeer-agent-secrets"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secrets-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "gitpeer-agent"}}},
	} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	records := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "gitpeer-records-peering-07"},
		Data: map[string][]byte{"consumer-1": []byte(`{"pinnedKey":"ab"}`)}}
	expectAllowed(t, "the agent creates the records", agent.Create(ctx, records))
	// RBAC lets ci write Secrets here: the policy, not a missing role, is what stops it below.
	expectAllowed(t, "ci creates another Secret in the agent's namespace", ci.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "ci-token"}}, client.DryRunAll))
	// forged is the current records with another pin (current: an update with a stale
	// resourceVersion would fail on the conflict, not on the policy).
	forged := func() *corev1.Secret {
		s := &corev1.Secret{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(records), s); err != nil {
			t.Fatal(err)
		}
		s.Data = map[string][]byte{"consumer-1": []byte(`{"pinnedKey":"cd"}`)}
		return s
	}
	// adminEdit tries an admin's dry-run edit of the records until done accepts its error, at most
	// 30 s, and returns the last error: the API server's admission plugin sees a policy or binding
	// come and go a moment after it does.
	adminEdit := func(done func(error) bool) (err error) {
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			err = admin.Update(ctx, forged(), client.DryRunAll)
			return done(err), nil
		})
		return err
	}
	if err := adminEdit(apierrors.IsForbidden); !apierrors.IsForbidden(err) {
		t.Fatalf("the records policy never refused a cluster admin's edit: %v", err)
	}
	for who, c := range map[string]client.Client{"a cluster admin": admin, "ServiceAccount ci with Secret rights": ci,
		"ServiceAccount default/gitpeer-agent": otherAgent} {
		expectDenied(t, who+" updates the records", c.Update(ctx, forged()))
		expectDenied(t, who+" patches the records", c.Patch(ctx, records.DeepCopy(),
			client.RawPatch("application/merge-patch+json", []byte(`{"data":{"consumer-1":null}}`))))
		expectDenied(t, who+" deletes the records", c.Delete(ctx, records.DeepCopy()))
		expectDenied(t, who+" creates records", c.Create(ctx,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "gitpeer-records-peering-0b"}}))
		expectDenied(t, who+" creates records under a generated name", c.Create(ctx,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, GenerateName: "gitpeer-records-peering-"}}))
		expectDenied(t, who+" creates gitpeer 0.1.0's records, which the agent merges", c.Create(ctx,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "gitpeer-issued-peering"}}))
	}
	expectDenied(t, "a cluster admin deletes every Secret of the agent's namespace", admin.DeleteAllOf(ctx, &corev1.Secret{},
		client.InNamespace(systemNamespace), client.MatchingFields{"metadata.name": records.Name}))
	// Every Secret write of the cluster passes the policy's match condition: others go through,
	// also those without a name in the request (generated names, deletecollection).
	expectAllowed(t, "a cluster admin still writes other Secrets there", admin.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "gitpeer-other"}}, client.DryRunAll))
	expectAllowed(t, "a cluster admin creates a Secret under a generated name", admin.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "app-"}}))
	expectAllowed(t, "a cluster admin deletes every Secret of a namespace without records", admin.DeleteAllOf(ctx, &corev1.Secret{},
		client.InNamespace("default")))
	got := &corev1.Secret{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(records), got); err != nil || string(got.Data["consumer-1"]) != `{"pinnedKey":"ab"}` {
		t.Fatalf("records after the denied writes: %v, %s", err, got.Data)
	}
	got.Data["consumer-1"] = []byte(`{"pinnedKey":"ef"}`)
	expectAllowed(t, "the agent updates the records", agent.Update(ctx, got))

	// A namespace being deleted loses its records with everything else (the namespace controller
	// deletes them; a stuck namespace would fail here).
	gone := "gitpeer-gone"
	goneAgent := as("system:serviceaccount:" + gone + ":gitpeer-agent")
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gone}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: gone, Name: "agent-secrets"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secrets-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: gone, Name: "gitpeer-agent"}}},
	} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	expectAllowed(t, "the agent of another namespace writes the records there", goneAgent.Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: gone, Name: "gitpeer-records-peering-07"}}))
	expectDenied(t, "the agent of another namespace writes the records of "+systemNamespace, goneAgent.Update(ctx, forged()))
	if err := admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gone}}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Name: gone}, &corev1.Namespace{})), nil
	}); err != nil {
		t.Errorf("namespace %s with records was not deleted: %v", gone, err)
	}

	// Break glass: without the binding an admin may edit the records; with it back, no longer.
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := admin.Get(ctx, client.ObjectKey{Name: "gitpeer-records"}, binding); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	expectAllowed(t, "a cluster admin edits the records once the binding is deleted",
		adminEdit(func(err error) bool { return err == nil }))
	if err := admin.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding.Name, Labels: binding.Labels}, Spec: binding.Spec}); err != nil {
		t.Fatal(err)
	}
	expectDenied(t, "a cluster admin edits the records once the binding is back", adminEdit(apierrors.IsForbidden))
}
