package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// DeleteInstanceProfile removes the instance profile Nodesmith manages for a
// node class: its roles first (IAM refuses to delete a profile that holds
// one), then the profile. The node class controller calls it from its
// finalizer, after the node class's instances are gone, because removing
// the role takes the credentials of any node still running with it. A
// profile already gone is success, so a retried finalizer finishes.
//
// A profile named by spec.instanceProfile is the user's and is never
// touched. The managed profile is deleted when the node class has
// spec.role, or when the profile carries this cluster's and this node
// class's tags (the node class switched from role to instanceProfile after
// the profile was made). Without an IAM client there is nothing to delete.
func (p *Provider) DeleteInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if p.iam == nil {
		return nil
	}
	name := ManagedInstanceProfileName(p.cluster.Name, p.opts.Region, nc.Name)
	// Not while a Resolve of this provider is half-way through making it.
	p.profileWriteMu.Lock()
	defer p.profileWriteMu.Unlock()
	p.profilesMu.Lock()
	delete(p.profiles, nc.Name)
	p.profilesMu.Unlock()
	if nc.Spec.InstanceProfile != nil && *nc.Spec.InstanceProfile == name {
		return nil
	}
	ip, err := p.getInstanceProfile(ctx, name)
	if err != nil {
		return fmt.Errorf("reading instance profile %s: %w", name, explainIAM(err, "iam:GetInstanceProfile"))
	}
	if ip == nil {
		return nil
	}
	if nc.Spec.Role == nil {
		tags := map[string]string{}
		for _, t := range ip.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if tags[awsv1.TagCluster] != p.cluster.Name || tags[awsv1.LabelEC2NodeClass] != nc.Name {
			return nil
		}
	}
	for _, r := range ip.Roles {
		role := aws.ToString(r.RoleName)
		_, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)})
		if err != nil && !IsNotFound(err) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", role, name, explainIAM(err, "iam:RemoveRoleFromInstanceProfile"))
		}
	}
	_, err = p.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil && !IsNotFound(err) {
		return fmt.Errorf("deleting instance profile %s: %w", name, explainIAM(err, "iam:DeleteInstanceProfile"))
	}
	p.log.Info("deleted instance profile", "instanceProfile", name, "ec2NodeClass", nc.Name)
	return nil
}
