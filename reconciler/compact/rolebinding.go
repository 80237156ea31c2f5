package compact

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RoleBinding is the compact form of an rbacv1.RoleBinding, kept whole: the
// agent updates the RoleBindings it reads from the cache, and an update
// without a field would remove it. Its strings are shared with equal ones of
// other cached objects (the same role and subject kind on every binding, a
// consumer's ID also its Tenant's name).
type RoleBinding struct {
	objectMeta
	roleRef  rbacv1.RoleRef
	subjects []rbacv1.Subject
}

// NewRoleBinding returns the compact form of rb.
func NewRoleBinding(rb *rbacv1.RoleBinding) *RoleBinding {
	subjects := slices.Clip(rb.Subjects)
	for i := range subjects {
		s := &subjects[i]
		s.APIGroup, s.Kind, s.Name, s.Namespace = Intern(s.APIGroup), Intern(s.Kind), Intern(s.Name), Intern(s.Namespace)
	}
	ref := rb.RoleRef
	return &RoleBinding{
		objectMeta: newWholeMeta(rb),
		roleRef:    rbacv1.RoleRef{APIGroup: Intern(ref.APIGroup), Kind: Intern(ref.Kind), Name: Intern(ref.Name)},
		subjects:   subjects,
	}
}

// Full returns the rbacv1.RoleBinding b is the compact form of (without its managed fields).
func (b *RoleBinding) Full() *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: b.full(), RoleRef: b.roleRef, Subjects: slices.Clone(b.subjects)}
}

// DeepCopyObject returns the full RoleBinding: what a read of the cache gets.
func (b *RoleBinding) DeepCopyObject() runtime.Object { return b.Full() }
