package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// instanceProfilePath groups the managed profiles, so an operator can list
// them (aws iam list-instance-profiles --path-prefix /nodesmith/).
const instanceProfilePath = "/nodesmith/"

// instanceProfileTTL is how long a profile found in order is not looked at
// again. IAM's request quotas are low and profiles rarely change; a launch
// that fails for a missing profile forgets it at once.
const instanceProfileTTL = 5 * time.Minute

// IAM error codes the profile code acts on.
const (
	codeEntityAlreadyExists = "EntityAlreadyExists"
	codeLimitExceeded       = "LimitExceeded"
)

type profileEntry struct {
	key  string
	name string
	at   time.Time
}

// ManagedInstanceProfileName is the instance profile Nodesmith manages for
// a node class with spec.role: one per node class, named from the cluster
// and a hash of the region and the node class. IAM is global, so the region
// keeps one cluster name in two regions apart; naming by node class rather
// than by role means a role change swaps the role inside the same profile
// instead of leaving the old profile behind, and deleting one node class
// never takes the profile of another that uses the same role.
func ManagedInstanceProfileName(cluster, region, nodeClass string) string {
	sum := sha256.Sum256([]byte(region + "/" + cluster + "/" + nodeClass))
	return fmt.Sprintf("%s_%s", cluster, hex.EncodeToString(sum[:8]))
}

// instanceProfileName is the spec's profile, or the managed one for the role.
func (p *Provider) instanceProfileName(nc *awsv1.EC2NodeClass) string {
	if nc.Spec.InstanceProfile != nil {
		return *nc.Spec.InstanceProfile
	}
	if nc.Spec.Role == nil {
		return ""
	}
	return ManagedInstanceProfileName(p.cluster.Name, p.opts.Region, nc.Name)
}

// instanceProfileTags are the tags a managed profile carries: the node
// class's tags, then the ownership tags DeleteInstanceProfile relies on.
func (p *Provider) instanceProfileTags(nc *awsv1.EC2NodeClass) map[string]string {
	out := make(map[string]string, len(nc.Spec.Tags)+2)
	for k, v := range nc.Spec.Tags {
		out[k] = v
	}
	out[awsv1.TagCluster] = p.cluster.Name
	out[awsv1.LabelEC2NodeClass] = nc.Name
	return out
}

// resolveInstanceProfile returns the profile instances launch with. With an
// IAM client it makes sure the profile exists: the managed one is created or
// adopted, holds the role and carries the tags; a spec.instanceProfile must
// exist and hold a role. Without one it trusts the name.
func (p *Provider) resolveInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	name := p.instanceProfileName(nc)
	if p.iam == nil || name == "" {
		return name, nil
	}
	key := hashJSON(struct {
		Role, Profile *string
		Tags          map[string]string
	}{nc.Spec.Role, nc.Spec.InstanceProfile, nc.Spec.Tags})
	fresh := func() bool {
		p.profilesMu.Lock()
		defer p.profilesMu.Unlock()
		e, ok := p.profiles[nc.Name]
		return ok && e.key == key && e.name == name && p.clock.Since(e.at) < instanceProfileTTL
	}
	if fresh() {
		return name, nil
	}
	p.profileWriteMu.Lock()
	defer p.profileWriteMu.Unlock()
	if fresh() {
		return name, nil // made by the caller we waited for
	}
	now := p.clock.Now()
	var err error
	if nc.Spec.InstanceProfile != nil {
		err = p.checkInstanceProfile(ctx, name)
	} else {
		err = p.ensureInstanceProfile(ctx, nc, name, *nc.Spec.Role)
	}
	if err != nil {
		return "", err
	}
	p.profilesMu.Lock()
	p.profiles[nc.Name] = profileEntry{key: key, name: name, at: now}
	p.profilesMu.Unlock()
	return name, nil
}

// forgetInstanceProfiles makes the next Resolve look at IAM again, after EC2
// said a launch template's profile does not exist.
func (p *Provider) forgetInstanceProfiles() {
	p.profilesMu.Lock()
	clear(p.profiles)
	p.profilesMu.Unlock()
}

func profileError(reason, msg string, err error) *ResolveError {
	return &ResolveError{Condition: awsv1.ConditionInstanceProfileReady, Reason: reason, Message: msg, Err: err}
}

// checkInstanceProfile verifies a user-managed profile.
func (p *Provider) checkInstanceProfile(ctx context.Context, name string) error {
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	switch {
	case IsNotFound(err):
		return profileError("InstanceProfileNotFound", fmt.Sprintf("instance profile %s not found: create it or set spec.role", name), nil)
	case err != nil:
		return profileError("GetInstanceProfileFailed", "reading instance profile "+name, explainIAM(err, "iam:GetInstanceProfile"))
	}
	if out.InstanceProfile == nil || len(out.InstanceProfile.Roles) == 0 {
		return profileError("InstanceProfileHasNoRole",
			fmt.Sprintf("instance profile %s has no role, so nodes would get no credentials: add the node role to it or set spec.role", name), nil)
	}
	return nil
}

// ensureInstanceProfile creates or adopts the managed profile and brings
// its role and tags in line with the node class.
func (p *Provider) ensureInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass, name, role string) error {
	tags := p.instanceProfileTags(nc)
	ip, err := p.getInstanceProfile(ctx, name)
	if err != nil {
		return profileError("GetInstanceProfileFailed", "reading instance profile "+name, explainIAM(err, "iam:GetInstanceProfile"))
	}
	if ip == nil {
		out, err := p.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name), Path: aws.String(instanceProfilePath), Tags: iamTags(tags),
		})
		switch {
		case errorCode(err) == codeEntityAlreadyExists:
			// Another replica created it between our read and our create.
			if ip, err = p.getInstanceProfile(ctx, name); err == nil && ip == nil {
				err = errors.New("it was deleted while being created")
			}
			if err != nil {
				return profileError("GetInstanceProfileFailed", "reading instance profile "+name, explainIAM(err, "iam:GetInstanceProfile"))
			}
		case err != nil:
			return profileError("CreateInstanceProfileFailed", "creating instance profile "+name,
				explainIAM(err, "iam:CreateInstanceProfile and iam:TagInstanceProfile"))
		default:
			ip = out.InstanceProfile
			p.log.Info("created instance profile", "instanceProfile", name, "ec2NodeClass", nc.Name)
		}
	}
	if err := p.ensureRole(ctx, ip, name, role); err != nil {
		return err
	}
	if missing := missingTags(ip.Tags, tags); len(missing) > 0 {
		if _, err := p.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: iamTags(missing)}); err != nil {
			return profileError("TagInstanceProfileFailed", "tagging instance profile "+name, explainIAM(err, "iam:TagInstanceProfile"))
		}
	}
	return nil
}

// ensureRole leaves exactly the node class's role in the profile (a profile
// holds at most one).
func (p *Provider) ensureRole(ctx context.Context, ip *iamtypes.InstanceProfile, name, role string) error {
	for _, r := range ip.Roles {
		have := aws.ToString(r.RoleName)
		if have == role {
			return nil
		}
		// The node class's role changed: swap it.
		_, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(have)})
		if err != nil && !IsNotFound(err) {
			return profileError("RemoveRoleFailed", fmt.Sprintf("removing role %s from instance profile %s", have, name),
				explainIAM(err, "iam:RemoveRoleFromInstanceProfile"))
		}
	}
	_, err := p.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)})
	if errorCode(err) == codeLimitExceeded {
		// Another writer (a second controller during a leader handover) added
		// a role first; it is fine if it is ours.
		if cur, gerr := p.getInstanceProfile(ctx, name); gerr == nil && cur != nil && len(cur.Roles) == 1 && aws.ToString(cur.Roles[0].RoleName) == role {
			return nil
		}
	}
	switch {
	case IsNotFound(err):
		return profileError("RoleNotFound", fmt.Sprintf("role %s not found: create the node role or fix spec.role", role), err)
	case err != nil:
		return profileError("AddRoleFailed", fmt.Sprintf("adding role %s to instance profile %s", role, name),
			explainIAM(err, "iam:AddRoleToInstanceProfile and iam:PassRole on role "+role))
	}
	return nil
}

// getInstanceProfile returns nil, nil when the profile does not exist.
func (p *Provider) getInstanceProfile(ctx context.Context, name string) (*iamtypes.InstanceProfile, error) {
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if out.InstanceProfile == nil {
		return nil, fmt.Errorf("GetInstanceProfile answered without a profile")
	}
	return out.InstanceProfile, nil
}

func missingTags(have []iamtypes.Tag, want map[string]string) map[string]string {
	got := make(map[string]string, len(have))
	for _, t := range have {
		got[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	out := map[string]string{}
	for k, v := range want {
		if cur, ok := got[k]; !ok || cur != v {
			out[k] = v
		}
	}
	return out
}

func iamTags(m map[string]string) []iamtypes.Tag {
	out := make([]iamtypes.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// explainIAM names the permission a denied IAM call needs: IAM's
// AccessDenied message names the action, but users read the condition, so
// it says which policy statement to add.
func explainIAM(err error, permission string) error {
	if err == nil {
		return nil
	}
	if Classify(errorCode(err)) == KindUnauthorized {
		return fmt.Errorf("%w (the controller's IAM policy needs %s)", err, permission)
	}
	return err
}
