package labkit

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/iampolicy"
	"github.com/nodesmith/nodesmith/pkg/fakeaws/tfpolicy"
	"github.com/nodesmith/nodesmith/test/testenv"
)

// AccountID is the simulated AWS account the policy is rendered for.
const AccountID = "123456789012"

// Permissions is the IAM policy the simulated AWS enforces and what it
// refused: the controller runs with the permissions a user installs, so a
// permission the policy lacks shows up as a denial.
type Permissions struct {
	srv    *fakeaws.Server
	policy *iampolicy.Policy

	mu      sync.Mutex
	denials []fakeaws.Denial
}

// enforcePolicy renders examples/terraform's controller policy for the lab
// and has the simulated AWS authorize every request against it.
func enforcePolicy(srv *fakeaws.Server, o Options) (*Permissions, error) {
	p, _, err := tfpolicy.Render(filepath.Join(testenv.RepoRoot(), "examples", "terraform"), tfpolicy.Values{
		Variables: map[string]string{"cluster_name": o.Cluster, "node_role_name": o.NodeRole},
		AccountID: AccountID, Region: o.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("rendering the Terraform policy: %w", err)
	}
	perms := &Permissions{srv: srv, policy: p}
	perms.Enforce(p)
	return perms, nil
}

// Policy is the rendered Terraform policy.
func (p *Permissions) Policy() *iampolicy.Policy { return p.policy }

// Enforce has the simulated AWS authorize against policy from now on (the
// rendered one, or a test's copy with a permission taken away).
func (p *Permissions) Enforce(policy *iampolicy.Policy) {
	p.srv.EnforcePolicy(policy, "")
	p.srv.OnDenial(func(d fakeaws.Denial) {
		p.mu.Lock()
		p.denials = append(p.denials, d)
		p.mu.Unlock()
	})
}

// DeniedSince is every refusal after the first n.
func (p *Permissions) DeniedSince(n int) []fakeaws.Denial {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]fakeaws.Denial(nil), p.denials[n:]...)
}

// Count is how many refusals there were.
func (p *Permissions) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.denials)
}
