package convert

import (
	"fmt"
	"strings"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
)

// ExampleNodeRolePrefix begins the name of the node role examples/terraform
// creates (NodesmithNodeRole-<cluster_name>, its node_role_name default).
// That policy lets the controller pass (iam:PassRole) this one role, so an
// EC2NodeClass naming another role, or an instance profile holding
// another role, never becomes Ready under it.
const ExampleNodeRolePrefix = "NodesmithNodeRole-"

// PassableUnderExamplePolicy reports whether the example controller policy
// lets the controller pass role, judged by its name: the role Terraform
// creates is the only one its PassNodeRole statement names.
func PassableUnderExamplePolicy(role string) bool {
	return strings.HasPrefix(role, ExampleNodeRolePrefix)
}

// nodeRole settles a converted class's role. With Options.NodeRole the
// class uses that role (an instance profile it named is dropped: its role
// is Karpenter's); without, a role or instance profile Karpenter's policy
// let Karpenter pass is kept, with a warning saying how to make it work
// under the example policy.
func (c *converter) nodeRole(s *awsv1.EC2NodeClassSpec) {
	if c.opts.NodeRole != "" {
		switch {
		case s.Role != nil && *s.Role != c.opts.NodeRole:
			c.warn("spec.role", fmt.Sprintf("%s replaced by %s (--node-role)", *s.Role, c.opts.NodeRole))
		case s.InstanceProfile != nil:
			c.warn("spec.instanceProfile", fmt.Sprintf("%s replaced by spec.role %s (--node-role): Nodesmith makes the class's instance profile for it", *s.InstanceProfile, c.opts.NodeRole))
		}
		role := c.opts.NodeRole
		s.Role, s.InstanceProfile = &role, nil
		return
	}
	const fix = "convert again with --node-role " + ExampleNodeRolePrefix + "<cluster> to use the role examples/terraform creates, " +
		"or add this role's ARN to the PassNodeRole statement of its controller policy (see docs/migrate-from-karpenter.md)"
	switch {
	case s.Role != nil && !PassableUnderExamplePolicy(*s.Role):
		c.warn("spec.role", fmt.Sprintf("%s is kept, but examples/terraform's controller policy lets Nodesmith pass (iam:PassRole) only its own node role, %s<cluster>: under that policy this class never becomes Ready; %s",
			*s.Role, ExampleNodeRolePrefix, fix))
	case s.InstanceProfile != nil:
		c.warn("spec.instanceProfile", fmt.Sprintf("%s is kept; launching with it passes its role, which examples/terraform's controller policy allows only for its own node role, %s<cluster>, whose profile lives under /nodesmith/: unless this profile holds that role, launches are refused; %s",
			*s.InstanceProfile, ExampleNodeRolePrefix, fix))
	}
}
