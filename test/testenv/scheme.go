package testenv

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	prv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1"
	cbv1 "github.com/nodesmith/nodesmith/apis/autoscaling/v1alpha1"
	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	v1 "github.com/nodesmith/nodesmith/apis/v1"
	nsv1alpha1 "github.com/nodesmith/nodesmith/apis/v1alpha1"
)

// NewScheme knows the built-in Kubernetes types (core, apps, policy,
// coordination, …), CRDs themselves, both Nodesmith API groups and SIG Autoscaling's CapacityBuffer and ProvisioningRequest.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		v1.AddToScheme,
		awsv1.AddToScheme,
		cbv1.AddToScheme,
		prv1.AddToScheme,
		nsv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}
