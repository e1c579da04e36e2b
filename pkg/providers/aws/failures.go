package aws

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
)

// markFailures records the fleet's capacity errors in the ICE cache. retry
// says a new attempt may succeed (something was marked, or a template was
// recreated); fatal is an error no other offering fixes. A quota error is
// fatal only when nothing else is left to try (a spot quota does not stop
// on-demand); an authorization error always is.
func (p *Provider) markFailures(pl plan.Plan, errs []ec2types.CreateFleetError) (retry bool, fatal error) {
	zoneOf := map[string]string{}
	for _, o := range pl.Options {
		zoneOf[o.SubnetID] = o.Zone
	}
	var unauthorized, quota, setup error
	for _, e := range errs {
		code, msg := aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage)
		ct := pl.CapacityType
		if e.Lifecycle != "" && ct != nsv1.CapacityTypeReserved {
			// A reserved launch's lifecycle is on-demand; its errors are the reservation's.
			ct = lifecycleCapacityType(e.Lifecycle)
		}
		switch {
		case ct == nsv1.CapacityTypeReserved && (code == codeReservationExceeded || Classify(code) == KindCapacity || strings.HasPrefix(code, "InvalidCapacityReservationId.")):
			// The reservation is used up, or gone (cancelled, expired)
			// since the node class read it: none of it until the next
			// read says otherwise.
			for _, o := range pl.Options {
				if o.Reservation != nil {
					p.reservations.exhausted(o.Reservation.ID)
					p.ice.MarkUnavailable(o.InstanceType.Name, o.Zone, nsv1.CapacityTypeReserved, code)
				}
			}
			retry = true
		case code == codeSpotQuota:
			// The account cannot run more spot at all: stop trying spot for a while.
			p.ice.MarkCapacityTypeUnavailable(nsv1.CapacityTypeSpot, code)
			retry = true
		case code == codeLaunchTemplateNotFound || code == codeLaunchTemplateIDGone:
			if ov := e.LaunchTemplateAndOverrides; ov != nil && ov.LaunchTemplateSpecification != nil {
				p.forgetLaunchTemplate(aws.ToString(ov.LaunchTemplateSpecification.LaunchTemplateName))
			} else {
				p.forgetLaunchTemplates()
			}
			retry = true
		case code == codeNoFreeAddresses:
			// The subnet is full, not the pool: another subnet in the zone may do.
			if ov := e.LaunchTemplateAndOverrides; ov != nil && ov.Overrides != nil {
				p.markSubnetFull(aws.ToString(ov.Overrides.SubnetId))
			}
			retry = true
		case Classify(code) == KindCapacity:
			if ov := e.LaunchTemplateAndOverrides; ov != nil && ov.Overrides != nil && ov.Overrides.InstanceType != "" {
				zone := aws.ToString(ov.Overrides.AvailabilityZone)
				if zone == "" {
					zone = zoneOf[aws.ToString(ov.Overrides.SubnetId)]
				}
				p.ice.MarkUnavailable(string(ov.Overrides.InstanceType), zone, ct, code)
			} else if ct == pl.CapacityType {
				// Not tied to one override: the fleet tried them all, except
				// where the subnet, not the pool, was the problem.
				full := fullSubnetsIn(errs)
				for _, o := range pl.Options {
					if !full[o.SubnetID] {
						p.ice.MarkUnavailable(o.InstanceType.Name, o.Zone, ct, code)
					}
				}
			}
			retry = true
		case code == codeSpotServiceLinkedRole:
			// No offering fixes this and retrying spot cannot: the account
			// needs a one-time step, which the error names.
			setup = &cloudprovider.AccountSetupError{Reason: ReasonSpotServiceLinkedRole, Err: fmt.Errorf("%s: %s (%s)", code, msg, hintSpotServiceLinkedRole)}
		case isInstanceProfileError(code, msg):
			// No offering fixes this; Resolve must look at IAM again.
			p.forgetInstanceProfiles()
			unauthorized = fmt.Errorf("%s: %s (%s)", code, msg, hintInstanceProfile)
		case Classify(code) == KindUnauthorized:
			unauthorized = fmt.Errorf("%s: %s (%s)", code, msg, hintUnauthorized)
		case Classify(code) == KindQuota:
			quota = fmt.Errorf("%s: %s (request a higher EC2 quota or lower the pool's limits)", code, msg)
		}
	}
	switch {
	case setup != nil:
		return false, setup
	case unauthorized != nil:
		return false, unauthorized
	case retry:
		return true, nil
	default:
		return false, quota
	}
}

// hintInstanceProfile is what to do when EC2 does not know the launch
// template's instance profile.
const hintInstanceProfile = "the node class's instance profile does not exist in IAM: set spec.role so Nodesmith creates one, " +
	"or create the profile spec.instanceProfile names; a profile created moments ago can take a few seconds to reach EC2"

// isInstanceProfileError reports EC2's answer for a launch template whose
// instance profile IAM does not have ("Value (x) for parameter
// iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name").
func isInstanceProfileError(code, msg string) bool {
	return code == "InvalidParameterValue" && strings.Contains(strings.ToLower(msg), "iaminstanceprofile")
}

func lifecycleCapacityType(l ec2types.InstanceLifecycle) string {
	if l == ec2types.InstanceLifecycleSpot {
		return nsv1.CapacityTypeSpot
	}
	return nsv1.CapacityTypeOnDemand
}

func overrideName(ov *ec2types.LaunchTemplateAndOverridesResponse) string {
	if ov == nil || ov.Overrides == nil {
		return "all options"
	}
	return string(ov.Overrides.InstanceType) + "/" + aws.ToString(ov.Overrides.SubnetId)
}

func failureText(failures []string) string {
	if len(failures) == 0 {
		return ""
	}
	const max = 8
	if len(failures) > max {
		failures = append(failures[:max:max], fmt.Sprintf("and %d more", len(failures)-max))
	}
	return " (" + strings.Join(failures, "; ") + ")"
}

func withFailures(err error, failures []string) error {
	if len(failures) == 0 {
		return err
	}
	return fmt.Errorf("%w%s", err, failureText(failures))
}

func fullSubnetsIn(errs []ec2types.CreateFleetError) map[string]bool {
	out := map[string]bool{}
	for _, e := range errs {
		if aws.ToString(e.ErrorCode) == codeNoFreeAddresses && e.LaunchTemplateAndOverrides != nil && e.LaunchTemplateAndOverrides.Overrides != nil {
			out[aws.ToString(e.LaunchTemplateAndOverrides.Overrides.SubnetId)] = true
		}
	}
	return out
}
