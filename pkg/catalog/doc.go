// Package catalog owns the instance types Nodesmith can launch: what each
// machine has, what a node of it keeps back from pods, what it is labelled,
// and where and at what price it can be bought.
//
// A tour:
//
//   - spec.go: Spec, one instance type as the cloud describes it, and
//     Specs(), the embedded us-east-1 snapshot (data/, with its sources in
//     data/SOURCES.md). The simulated AWS serves DescribeInstanceTypes from
//     these; the AWS provider fills the same struct from live calls.
//   - instancetype.go: Options and NewInstanceType, which turns a Spec into
//     an InstanceType (types.go) with capacity, overhead, allocatable and the
//     well-known labels; LabelsFor adds an offering's zone and capacity type.
//   - overhead.go: the EKS AL2023 math. Capacity memory is the type's memory
//     (less 64 MiB on arm64) less 7.5% for the VM; pods are ENI-limited
//     (default-card ENIs × (IPv4 per ENI − 1) + 2); kube-reserved is
//     11 MiB × pods + 255 MiB, 6/1/0.5/0.5/0.25…% of cores and 1Gi disk;
//     eviction is 100Mi memory and 10% of the 20Gi root volume. It matches
//     the published allocatable of every snapshot type that has ENI data.
//   - kubelet.go: KubeletSettings (maxPods, podsPerCore, reservations,
//     evictionHard) and the converter from the EC2NodeClass kubelet block.
//   - offerings.go: the deterministic rule that spreads snapshot types over
//     zones and prices their spot offerings, and Offerings helpers.
//   - catalog.go: Load, the embedded snapshot as a read-only Catalog.
//   - unavailable.go: UnavailableOfferings, the TTL cache of offerings that
//     recently ran out of capacity, and WithAvailability, which applies it.
//
// The package is pure decision code: it imports no client-go client, no
// controller-runtime and no AWS SDK (k8s.io/api, apimachinery, k8s.io/utils
// and the apis/ types only). Time comes in through a clock.Clock.
package catalog
