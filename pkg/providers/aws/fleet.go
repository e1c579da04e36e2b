package aws

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// fleetRequest is one claim's share of a CreateFleet call.
type fleetRequest struct {
	// input is the call without ClientToken and without the claim's own tags;
	// equal inputs are merged into one call.
	input *ec2.CreateFleetInput
	// claimTags are the tags only this claim's instance carries.
	claimTags map[string]string
	// claimName and launchKey name the claim (cloudprovider.LaunchKey).
	claimName, launchKey string
	// token is the claim's idempotency token for this round (launchToken).
	token string
}

// fleetOutcome is what a claim got: an instance, or the errors.
type fleetOutcome struct {
	instanceID   string
	instanceType string
	zone         string
	subnetID     string
	capacityType string
	errs         []ec2types.CreateFleetError
}

// launchedInstance is one instance a CreateFleet answer names.
type launchedInstance struct {
	id, instanceType, zone, subnetID, capacityType string
}

// fleetResult is one claim's share of a CreateFleet call.
type fleetResult struct {
	Out fleetOutcome
	Err error
}

// runFleet makes one CreateFleet call for claims that asked for the same
// thing, and splits the answer per claim in the given order. A call for one
// claim tags its instance with the claim at launch; a call for several tags
// every instance with all their launch keys at launch and each claim's own
// tags afterwards, and a claim whose tag could not be written does not get
// the instance: its next Create takes it (see idempotency.go).
func (p *Provider) runFleet(ctx context.Context, items []fleetRequest) []fleetResult {
	results := make([]fleetResult, len(items))
	in := *items[0].input
	in.TargetCapacitySpecification = &ec2types.TargetCapacitySpecificationRequest{
		TotalTargetCapacity:       aws.Int32(int32(len(items))),
		DefaultTargetCapacityType: items[0].input.TargetCapacitySpecification.DefaultTargetCapacityType,
	}
	if len(items) == 1 {
		in.ClientToken = aws.String(items[0].token)
		in.TagSpecifications = withTags(in.TagSpecifications, items[0].claimTags)
	} else {
		tokens := make([]string, len(items))
		keys := make([]string, len(items))
		for i, it := range items {
			tokens[i], keys[i] = it.token, it.launchKey
		}
		in.ClientToken = aws.String(batchToken(tokens))
		in.TagSpecifications = withTags(in.TagSpecifications, map[string]string{awsv1.TagLaunchBatch: strings.Join(keys, " ")})
	}
	out, err := p.ec2.CreateFleet(ctx, &in)
	if err != nil {
		err = fmt.Errorf("creating fleet: %w", explain(err))
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	launched := launchedInstances(out)
	for i, item := range items {
		if i >= len(launched) {
			results[i].Out = fleetOutcome{errs: out.Errors}
			continue
		}
		li := launched[i]
		if len(items) > 1 {
			// A merged call could not carry per-claim tags; add them now.
			p.assign(li.id, item.claimName)
			if err := p.tagClaim(ctx, li.id, item.claimName); err != nil {
				p.log.Error(err, "tagging a batched instance with its claim; the claim takes it on its next launch", "instance", li.id)
				results[i].Err = &claimTagError{err: err}
				continue
			}
		}
		results[i].Out = fleetOutcome{instanceID: li.id, instanceType: li.instanceType, zone: li.zone, subnetID: li.subnetID, capacityType: li.capacityType, errs: out.Errors}
	}
	return results
}

func launchedInstances(out *ec2.CreateFleetOutput) []launchedInstance {
	var res []launchedInstance
	for _, fi := range out.Instances {
		zone, subnet := aws.ToString(fi.AvailabilityZone), aws.ToString(fi.SubnetId)
		if ov := fi.LaunchTemplateAndOverrides; ov != nil && ov.Overrides != nil {
			if zone == "" {
				zone = aws.ToString(ov.Overrides.AvailabilityZone)
			}
			if subnet == "" {
				subnet = aws.ToString(ov.Overrides.SubnetId)
			}
		}
		ct := nsv1.CapacityTypeOnDemand
		if fi.Lifecycle == ec2types.InstanceLifecycleSpot {
			ct = nsv1.CapacityTypeSpot
		}
		for _, id := range fi.InstanceIds {
			res = append(res, launchedInstance{id: id, instanceType: string(fi.InstanceType), zone: zone, subnetID: subnet, capacityType: ct})
		}
	}
	return res
}

// withTags returns copies of the tag specifications with extra tags added.
func withTags(specs []ec2types.TagSpecification, extra map[string]string) []ec2types.TagSpecification {
	out := make([]ec2types.TagSpecification, len(specs))
	for i, s := range specs {
		m := map[string]string{}
		for _, t := range s.Tags {
			m[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		for k, v := range extra {
			m[k] = v
		}
		out[i] = ec2types.TagSpecification{ResourceType: s.ResourceType, Tags: ec2Tags(m)}
	}
	return out
}
