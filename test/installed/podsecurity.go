package installed

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CheckRestrictedPod dry-runs, with c, the pod the ReplicaSet of dep would
// create in namespace, through admission (Pod Security, the ServiceAccount) as
// the ReplicaSet controller's pod would go: it must be admitted; and, as a
// control that the namespace really enforces the restricted standard, the
// same pod without its security contexts must be refused.
func CheckRestrictedPod(ctx context.Context, c client.Client, namespace string, dep *appsv1.Deployment) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: dep.Name + "-", Labels: dep.Spec.Template.Labels},
		Spec:       *dep.Spec.Template.Spec.DeepCopy(),
	}
	if err := c.Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
		return fmt.Errorf("the agent's pod is not admitted: %w", err)
	}
	root := pod.DeepCopy()
	root.Spec.SecurityContext, root.Spec.Containers[0].SecurityContext = nil, nil
	if err := c.Create(ctx, root, client.DryRunAll); !apierrors.IsForbidden(err) {
		return fmt.Errorf("a pod without security context was not refused by pod security: %v", err)
	}
	return nil
}
