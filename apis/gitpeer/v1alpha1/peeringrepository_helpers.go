package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetConditions returns the status conditions of the object; with SetConditions it makes the
// PeeringRepository a fluxcd/pkg/runtime/conditions Setter, usable with its patch helper.
func (in *PeeringRepository) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions sets the status conditions of the object.
func (in *PeeringRepository) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetRequeueAfter returns the interval after which the repository is fetched again.
func (in *PeeringRepository) GetRequeueAfter() time.Duration {
	if in.Spec.Interval == nil || in.Spec.Interval.Duration <= 0 {
		return DefaultInterval
	}
	return in.Spec.Interval.Duration
}

// GetBranch returns spec.branch, or DefaultBranch if empty.
func (in *PeeringRepository) GetBranch() string {
	if in.Spec.Branch == "" {
		return DefaultBranch
	}
	return in.Spec.Branch
}

// GetTimeout returns spec.timeout, or DefaultTimeout if unset.
func (in *PeeringRepository) GetTimeout() time.Duration {
	if in.Spec.Timeout == nil || in.Spec.Timeout.Duration <= 0 {
		return DefaultTimeout
	}
	return in.Spec.Timeout.Duration
}

// IsProvider reports whether the provider role is enabled.
func (in *PeeringRepository) IsProvider() bool {
	return in.Spec.Provider != nil && in.Spec.Provider.Enabled
}

// IsConsumer reports whether the consumer role is enabled (at least one wanted provider).
func (in *PeeringRepository) IsConsumer() bool {
	return in.Spec.Consumer != nil && len(in.Spec.Consumer.Providers) > 0
}

// GetMode returns spec.liqo.mode, or LiqoAuto if unset.
func (in *LiqoSpec) GetMode() LiqoMode {
	if in == nil || in.Mode == "" {
		return LiqoAuto
	}
	return in.Mode
}

// GetNamespace returns spec.liqo.namespace, or DefaultLiqoNamespace if empty.
func (in *LiqoSpec) GetNamespace() string {
	if in == nil || in.Namespace == "" {
		return DefaultLiqoNamespace
	}
	return in.Namespace
}

// GetCertificateTTL returns spec.certificateTTL, or DefaultCertificateTTL if unset.
func (in *ProviderSpec) GetCertificateTTL() time.Duration {
	if in == nil || in.CertificateTTL == nil || in.CertificateTTL.Duration <= 0 {
		return DefaultCertificateTTL
	}
	return in.CertificateTTL.Duration
}

// GetClusterRoleName returns spec.clusterRoleName, or DefaultClusterRoleName if empty.
func (in *ProviderSpec) GetClusterRoleName() string {
	if in == nil || in.ClusterRoleName == "" {
		return DefaultClusterRoleName
	}
	return in.ClusterRoleName
}

// GetDeletionPolicy returns spec.deletionPolicy, or DeletionRevoke if empty.
func (in *ProviderSpec) GetDeletionPolicy() DeletionPolicy {
	if in == nil || in.DeletionPolicy == "" {
		return DeletionRevoke
	}
	return in.DeletionPolicy
}

// GetMaxPendingRequests returns spec.maxPendingRequests, or DefaultMaxPendingRequests if unset.
func (in *ProviderSpec) GetMaxPendingRequests() int {
	if in == nil || in.MaxPendingRequests == nil || *in.MaxPendingRequests <= 0 {
		return DefaultMaxPendingRequests
	}
	return int(*in.MaxPendingRequests)
}

// GetReviewBranchTemplate returns spec.reviewBranchTemplate, or DefaultReviewBranchTemplate if empty.
func (in *ConsumerSpec) GetReviewBranchTemplate() string {
	if in == nil || in.ReviewBranchTemplate == "" {
		return DefaultReviewBranchTemplate
	}
	return in.ReviewBranchTemplate
}

// GetMode returns the verification mode, or VerifyRelevant if empty.
func (in *VerifySpec) GetMode() VerificationMode {
	if in == nil || in.Mode == "" {
		return VerifyRelevant
	}
	return in.Mode
}

// GetAuthor returns the commit author name and email, with the defaults for empty values.
func (in *CommitSpec) GetAuthor() (name, email string) {
	name, email = DefaultAuthorName, DefaultAuthorEmail
	if in != nil && in.Author != nil {
		if in.Author.Name != "" {
			name = in.Author.Name
		}
		if in.Author.Email != "" {
			email = in.Author.Email
		}
	}
	return name, email
}

// TrustedCAFor returns the CA an admin configured for provider, or nil.
func (in *ConsumerSpec) TrustedCAFor(provider string) *TrustedCA {
	if in == nil {
		return nil
	}
	for i := range in.TrustedCAs {
		if string(in.TrustedCAs[i].Provider) == provider {
			return &in.TrustedCAs[i]
		}
	}
	return nil
}
