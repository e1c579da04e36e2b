// Package convert turns Karpenter manifests into Nodesmith ones, so a team
// that runs Karpenter can try Nodesmith with the NodePools and
// EC2NodeClasses it already has.
//
// It reads karpenter.sh/v1beta1 and karpenter.sh/v1 NodePools and
// karpenter.k8s.aws/v1beta1 and karpenter.k8s.aws/v1 EC2NodeClasses from
// multi-document YAML and returns nodesmith.sh/v1 NodePools and
// aws.nodesmith.sh/v1 EC2NodeClasses in the same order:
//
//   - label and annotation keys are renamed (karpenter.sh/capacity-type →
//     nodesmith.sh/capacity-type, karpenter.k8s.aws/instance-* →
//     aws.nodesmith.sh/instance-*, karpenter.sh/do-not-disrupt →
//     nodesmith.sh/do-not-disrupt) in requirements, template labels and
//     annotations;
//   - v1beta1 fields move to where v1 (and Nodesmith) keeps them:
//     WhenUnderutilized becomes WhenEmptyOrUnderutilized, disruption.expireAfter
//     moves into the template, the template's kubelet block moves into the
//     EC2NodeClass its nodeClassRef names, a nodeClassRef without group gets
//     aws.nodesmith.sh, amiFamily without amiSelectorTerms becomes an alias;
//   - every field without a Nodesmith equivalent is reported as a Warning,
//     never dropped silently; a document that cannot be converted at all
//     (a Windows node class, a pool that only asks for reserved capacity) is
//     an error that names it.
//
// Documents of other kinds pass through unchanged, with a warning.
// Tags in selector terms are AWS tags on your subnets and security groups,
// not Kubernetes labels: they are kept as written (karpenter.sh/discovery
// stays karpenter.sh/discovery).
//
// The package is pure: it imports no client-go client, no controller-runtime
// and no AWS SDK. cmd/nodesmith (convert, plan --nodepools) reads files and
// prints; test/integration applies the output to a real API server.
package convert
