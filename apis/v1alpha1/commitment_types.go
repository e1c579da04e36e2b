package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Commitment declares capacity the account already pays for by the hour: a
// Savings Plan or a Reserved Instance. On-demand usage it covers is
// prepaid, so the solver prices on-demand offerings in its scope at zero
// until the commitment's dollars per hour are used up by running and
// planned on-demand nodes, then at list price (catalog.Commitments).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Hourly",type=string,JSONPath=`.spec.hourlyCommitment`
type Commitment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CommitmentSpec `json:"spec"`
}

// Commitment types.
const (
	// CommitmentComputeSavingsPlan covers on-demand usage of any type in any region.
	CommitmentComputeSavingsPlan = "ComputeSavingsPlan"
	// CommitmentEC2InstanceSavingsPlan covers one instance family in one region.
	CommitmentEC2InstanceSavingsPlan = "EC2InstanceSavingsPlan"
	// CommitmentReservedInstance covers one instance family in one region
	// (a regional, size-flexible RI, expressed in dollars per hour).
	CommitmentReservedInstance = "ReservedInstance"
)

// CommitmentSpec is the commitment's scope and amount.
//
// +kubebuilder:validation:XValidation:message="an EC2InstanceSavingsPlan or ReservedInstance needs family and region",rule="self.type == 'ComputeSavingsPlan' || (has(self.family) && has(self.region))"
// +kubebuilder:validation:XValidation:message="a ComputeSavingsPlan covers every family and region: remove family and region",rule="self.type != 'ComputeSavingsPlan' || (!has(self.family) && !has(self.region))"
type CommitmentSpec struct {
	// Type is ComputeSavingsPlan, EC2InstanceSavingsPlan or ReservedInstance.
	// +kubebuilder:validation:Enum=ComputeSavingsPlan;EC2InstanceSavingsPlan;ReservedInstance
	// +required
	Type string `json:"type"`
	// HourlyCommitment is the on-demand list-price spend covered each
	// hour, in USD ("2.5").
	// +kubebuilder:validation:XValidation:message="hourlyCommitment must be a positive decimal number of dollars per hour",messageExpression="'hourlyCommitment must be a positive decimal number of dollars per hour such as 2.5; got ' + self",rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$') && double(self) > 0.0"
	// +required
	HourlyCommitment string `json:"hourlyCommitment"`
	// Family is the instance family covered ("m5"); EC2InstanceSavingsPlan and ReservedInstance only.
	// +optional
	Family string `json:"family,omitempty"`
	// Region is the region covered ("us-east-1"); EC2InstanceSavingsPlan and ReservedInstance only.
	// +optional
	Region string `json:"region,omitempty"`
}

// +kubebuilder:object:root=true

// CommitmentList is a list of Commitments.
type CommitmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Commitment `json:"items"`
}
