package v1beta1

// ClusterID is the identifier of a Liqo cluster (Liqo's core/v1beta1 ClusterID): an RFC 1123 label.
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
type ClusterID string

// AuthParams contains the authentication parameters for the tenant cluster.
type AuthParams struct {
	// CA is the PEM-encoded certificate authority of the provider's API server.
	CA []byte `json:"ca,omitempty"`
	// SignedCRT is the PEM-encoded client certificate issued to the consumer.
	SignedCRT []byte `json:"signedCRT,omitempty"`
	// APIServer is the URL of the provider's API server.
	APIServer string `json:"apiServer,omitempty"`
	// ProxyURL is the URL of the proxy to use to reach the provider's API server (optional).
	ProxyURL *string `json:"proxyURL,omitempty"`

	// AwsConfig holds the credentials Liqo uses for EKS providers. gitpeer never sets or reads it; it
	// is kept so that the schema equals Liqo's and objects written by Liqo round-trip unchanged.
	AwsConfig *AwsConfig `json:"awsConfig,omitempty"`
}

// AwsConfig contains the AWS configuration and access key for the Liqo user and the current EKS cluster.
type AwsConfig struct {
	// AwsUserArn is the ARN of the AWS IAM user Liqo created for the consumer.
	AwsUserArn string `json:"awsUserArn"`
	// AwsAccessKeyID is the access key ID of that user.
	AwsAccessKeyID string `json:"awsAccessKeyID"`
	// AwsSecretAccessKey is the secret access key of that user.
	AwsSecretAccessKey string `json:"awsSecretAccessKey"`
	// AwsRegion is the region of the EKS cluster.
	AwsRegion string `json:"awsRegion"`
	// AwsClusterName is the name of the EKS cluster.
	AwsClusterName string `json:"awsClusterName"`
}
