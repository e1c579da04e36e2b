// Package aws is the AWS implementation of cloudprovider.CloudProvider: it
// turns NodeClaims into EC2 instances and back.
//
// A tour, in the order a launch happens:
//
//   - resolve.go: an EC2NodeClass's selector terms become subnets (with free
//     addresses), security groups, images (an alias through the public SSM
//     parameter per architecture, or ids, names, tags) and an instance
//     profile. Failures are *ResolveError values naming the condition and a
//     message a user can act on (the missing discovery tag, say); the node
//     class controller writes them to status with Resolved.ApplyTo.
//   - instanceprofile.go: with an IAM client (Config.IAM), a node class
//     with spec.role gets its own instance profile, named from the
//     cluster, region and node class (ManagedInstanceProfileName), created
//     or adopted, holding the role and carrying the node class's tags and
//     the ownership tags; spec.instanceProfile must exist and hold a role.
//     Missing permissions are named in the error (iam:CreateInstanceProfile,
//     …). DeleteInstanceProfile, from the node class finalizer, removes the
//     role and the profile. Without an IAM client only the name is
//     computed, and the profile is trusted to exist.
//   - instancetypes.go, pricing.go, ondemand.go, discovery.go: the catalog's
//     types for the node class's zones and kubelet settings, priced and
//     placed by what AWS says once read: spot prices from
//     DescribeSpotPriceHistory (a spot offering exists only where the history
//     has a price), on-demand prices from the Pricing API's GetProducts, the
//     zones from DescribeInstanceTypeOfferings (DiscoverInstanceTypes) and
//     types the snapshot lacks from DescribeInstanceTypes. Until a part is
//     read it comes from the embedded snapshot; CatalogStatus says which.
//     The pricing controllers refresh each part on its own timer. Cached for
//     5 minutes; the ICE cache is applied on every read.
//   - plan/ (pure): which options one claim asks for (see its doc).
//   - userdata/ (pure): nodeadm NodeConfig or Bottlerocket TOML with the
//     node's labels and taints, always including the unregistered taint;
//     ParseUserData reads them back for the simulator and the e2e bridge.
//   - launchtemplate.go: one template per distinct launch settings, named by
//     their hash and reused; launchtemplate_gc.go deletes the cluster's
//     templates no launch used for LaunchTemplateTTL (1h).
//   - create.go, fleet.go: CreateAll launches a provisioning cycle's claims
//     together, one instant CreateFleet per group of up to 19 claims asking
//     for the same thing (in input order, so a replay makes the same calls).
//     Capacity errors mark the ICE cache and the claim is planned again at
//     once with what is left: other spot pools, then on-demand. Create is
//     CreateAll of one claim.
//   - idempotency.go: launching each claim once. The ClientToken comes from
//     the claim's UID, launch attempt and fallback round; before any
//     CreateFleet, an instance tagged with the claim (or an untagged one of
//     a merged launch naming the claim's launch key) is taken instead.
//   - instances.go: Get, List, Delete, and Orphans for garbage collection.
//   - errors.go: error classification (rejected by AWS, or no answer:
//     cloudprovider.LaunchRejectedError, CloudUnavailableError) and the
//     troubleshooting hints.
//   - clients.go: RetryOptions, the SDK's standard retryer configured
//     (attempts, backoff cap, per-attempt timeout) and told of each retry.
//
// The SDK clients come from the caller, who also picks the retryer
// (RetryOptions, or NewRetryer for a hand-built aws.Config). Time
// comes from the injected clock. This package may import the AWS SDK; it
// must not import client-go clients or controller-runtime, so the
// simulator can drive it without a cluster.
package aws
